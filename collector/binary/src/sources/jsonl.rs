//! JSONL metric lines, decoded from bytes with no I/O (the rules of the Python collector's
//! `jsonl.parse_line`, which the services and the conformance suite hold it to):
//!
//! ```text
//! {"step": 120, "wall_time": 1732867200.5, "metrics": {"loss": 0.31, "lr": 3e-4}}
//! ```
//!
//! `step` is a 64-bit integer, `wall_time` seconds since the Unix epoch, each metric a
//! number; `NaN`, `Infinity` and `-Infinity` are taken as bare tokens (as Python's
//! `json.dumps` writes them) or as strings. A malformed line is a `LineError` saying why.

use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;
use thiserror::Error;

use crate::sources::names::name_problem;
use crate::sources::repr::{py_float, py_repr, py_str};

/// Why a line was not read; shown after its file and line number.
#[derive(Debug, Error, PartialEq)]
#[error("{0}")]
pub struct LineError(pub String);

/// One metric line's columns.
#[derive(Debug, PartialEq)]
pub struct Line {
    pub step: i64,
    pub wall_time: f64,
    pub metrics: Vec<(String, f64)>,
}

/// Bare non-finite tokens become marker strings before decoding (JSON has no such tokens):
/// the first marker always, the second in a second decoding when the line holds a `\u0000`
/// escape (a string of its own could then read as a first marker; never as both).
const BARE: [(&[u8], [&str; 2], f64); 3] = [
    (
        b"-Infinity",
        ["\u{0}-Infinity", "\u{0}\u{1}-Infinity"],
        f64::NEG_INFINITY,
    ),
    (
        b"Infinity",
        ["\u{0}Infinity", "\u{0}\u{1}Infinity"],
        f64::INFINITY,
    ),
    (b"NaN", ["\u{0}NaN", "\u{0}\u{1}NaN"], f64::NAN),
];

/// The strings a metric may be written as for a non-finite value.
fn non_finite(text: &str) -> Option<f64> {
    match text {
        "NaN" | "nan" => Some(f64::NAN),
        "Infinity" | "inf" => Some(f64::INFINITY),
        "-Infinity" | "-inf" => Some(f64::NEG_INFINITY),
        _ => None,
    }
}

/// How a decoded value may hold bare tokens: not at all (the line decoded as it is), as
/// first markers no string of the line can forge, or as first markers that are bare tokens
/// only where the second decoding holds a second marker (the value there given).
#[derive(Clone, Copy)]
enum Marks<'a> {
    Plain,
    Quoted,
    Twice(&'a Value),
}

/// Where nothing corresponds in the second decoding (never a marker).
static NOTHING: Value = Value::Null;

impl<'a> Marks<'a> {
    /// The marks of a part of the value, `pick` finding it in the second decoding.
    fn part(self, pick: impl FnOnce(&'a Value) -> Option<&'a Value>) -> Self {
        match self {
            Self::Twice(second) => Self::Twice(pick(second).unwrap_or(&NOTHING)),
            other => other,
        }
    }

    /// The number of the bare token `value` stands for, if it is one.
    fn bare(self, value: &Value) -> Option<f64> {
        let Value::String(text) = value else {
            return None;
        };
        let second = match self {
            Self::Twice(Value::String(second)) => Some(second.as_str()),
            _ => None,
        };
        self.token(text, second)
    }

    /// The number of the bare token `text` stands for, `second` at its place in the second
    /// decoding.
    fn token(self, text: &str, second: Option<&str>) -> Option<f64> {
        let (_, markers, number) = BARE.iter().find(|(_, m, _)| m[0] == text)?;
        match self {
            Self::Plain => None,
            Self::Quoted => Some(*number),
            Self::Twice(_) => (second == Some(markers[1])).then_some(*number),
        }
    }

    /// `value` as Python's `repr` of what `json.loads` gives (bare tokens as floats).
    fn repr(self, value: &Value) -> String {
        if let Some(number) = self.bare(value) {
            return py_float(number);
        }
        match value {
            Value::Array(items) => {
                let seconds = self.elements();
                let inner: Vec<String> = items
                    .iter()
                    .enumerate()
                    .map(|(at, item)| self.part(|_| seconds.get(at).copied()).repr(item))
                    .collect();
                format!("[{}]", inner.join(", "))
            }
            Value::Object(map) => {
                let seconds = self.members();
                let inner: Vec<String> = map
                    .iter()
                    .enumerate()
                    .map(|(at, (k, v))| {
                        let marks = self.part(|_| seconds.get(at).copied());
                        format!("{}: {}", py_str(k), marks.repr(v))
                    })
                    .collect();
                format!("{{{}}}", inner.join(", "))
            }
            leaf => py_repr(leaf),
        }
    }

    /// The second decoding's elements of this array (empty unless `Twice`).
    fn elements(self) -> Vec<&'a Value> {
        match self {
            Self::Twice(Value::Array(items)) => items.iter().collect(),
            _ => Vec::new(),
        }
    }

    /// The second decoding's member values of this object, in order (empty unless `Twice`).
    fn members(self) -> Vec<&'a Value> {
        match self {
            Self::Twice(Value::Object(map)) => map.values().collect(),
            _ => Vec::new(),
        }
    }

    /// Whether a bare token stands where a name must be (no JSON to Python's `json.loads`).
    fn bare_key(self, value: &Value) -> bool {
        match value {
            Value::Array(items) => {
                let seconds = self.elements();
                items
                    .iter()
                    .enumerate()
                    .any(|(at, item)| self.part(|_| seconds.get(at).copied()).bare_key(item))
            }
            Value::Object(map) => {
                let keys: Vec<&str> = match self {
                    Self::Twice(Value::Object(second)) => {
                        second.keys().map(String::as_str).collect()
                    }
                    _ => Vec::new(),
                };
                let seconds = self.members();
                map.iter().enumerate().any(|(at, (key, item))| {
                    self.token(key, keys.get(at).copied()).is_some()
                        || self.part(|_| seconds.get(at).copied()).bare_key(item)
                })
            }
            _ => false,
        }
    }
}

/// `raw` with bare `NaN`/`Infinity`/`-Infinity` outside strings written as the `which`
/// marker strings.
fn quote_bare_tokens(raw: &[u8], which: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(raw.len() + 16);
    let (mut at, mut in_string, mut escaped) = (0, false, false);
    while let Some(&byte) = raw.get(at) {
        if in_string {
            in_string = escaped || byte != b'"';
            escaped = !escaped && byte == b'\\';
        } else if byte == b'"' {
            in_string = true;
        } else if let Some((token, markers, _)) = BARE
            .iter()
            .find(|(token, _, _)| raw.get(at..).is_some_and(|r| r.starts_with(token)))
        {
            let marker = markers.get(which).copied().unwrap_or_default();
            out.extend_from_slice(serde_json::json!(marker).to_string().as_bytes());
            at += token.len();
            continue;
        }
        out.push(byte);
        at += 1;
    }
    out
}

/// Whether Python's `bytes.strip()` leaves nothing of `raw`: a blank line, skipped.
pub fn is_blank(raw: &[u8]) -> bool {
    raw.iter()
        .all(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c))
}

/// How deep a line's arrays and objects nest at most (outside strings).
fn nesting(raw: &[u8]) -> usize {
    let (mut depth, mut deepest, mut in_string, mut escaped) = (0usize, 0, false, false);
    for &byte in raw {
        if in_string {
            in_string = escaped || byte != b'"';
            escaped = !escaped && byte == b'\\';
        } else {
            match byte {
                b'"' => in_string = true,
                b'[' | b'{' => {
                    depth += 1;
                    deepest = deepest.max(depth);
                }
                b']' | b'}' => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
    }
    deepest
}

/// serde_json's own bound on nesting: a line nested deeper is decoded on a thread of its
/// own, with no bound but `MAX_NESTING` and a stack for it.
const SERDE_NESTING: usize = 127;

/// The nesting the Python collector's decoder (orjson) reads; a line nested deeper is not
/// JSON to it either (its fallback, `json.loads`, raises RecursionError there).
pub const MAX_NESTING: usize = 1024;

/// The stack a line nested up to `MAX_NESTING` deep is decoded with (each level costs
/// serde_json, `py_repr` and the drop of the value a few hundred bytes to a few KiB).
const DEEP_STACK: usize = 64 * 1024 * 1024;

/// `T` from `raw`, with serde_json's recursion bound unless `deep`.
fn from_slice<'a, T: Deserialize<'a>>(raw: &'a [u8], deep: bool) -> serde_json::Result<T> {
    let mut deserializer = serde_json::Deserializer::from_slice(raw);
    if deep {
        deserializer.disable_recursion_limit();
    }
    let value = T::deserialize(&mut deserializer)?;
    deserializer.end()?;
    Ok(value)
}

/// A line decoded, and how its bare tokens were quoted (the second decoding, if needed).
struct Decoded {
    value: Value,
    second: Option<Value>,
    quoted: bool,
}

impl Decoded {
    fn marks(&self) -> Marks<'_> {
        match (&self.second, self.quoted) {
            (Some(second), _) => Marks::Twice(second),
            (None, true) => Marks::Quoted,
            (None, false) => Marks::Plain,
        }
    }
}

fn decode(raw: &[u8], deep: bool) -> Result<Decoded, LineError> {
    let first = match from_slice(raw, deep) {
        Ok(value) => {
            return Ok(Decoded {
                value,
                second: None,
                quoted: false,
            })
        }
        Err(first) => first,
    };
    let refused = |_| LineError(format!("not JSON: {first}"));
    let value = from_slice(&quote_bare_tokens(raw, 0), deep).map_err(refused)?;
    // A `\u0000` escape can forge a first marker: decoded again with the second ones, a
    // bare token is where both decodings hold their marker.
    let forgeable = raw.windows(6).any(|w| w == b"\\u0000");
    let second = if forgeable {
        Some(from_slice(&quote_bare_tokens(raw, 1), deep).map_err(refused)?)
    } else {
        None
    };
    let decoded = Decoded {
        value,
        second,
        quoted: true,
    };
    if decoded.marks().bare_key(&decoded.value) {
        return Err(LineError(format!("not JSON: {first}")));
    }
    Ok(decoded)
}

fn metric_value(name: &str, value: &Value, marks: Marks<'_>) -> Result<f64, LineError> {
    let refused =
        |shown: String| LineError(format!("metric {} is {shown}, not a number", py_str(name)));
    if let Some(number) = marks.bare(value) {
        return Ok(number);
    }
    match value {
        Value::Number(n) => n.as_f64().ok_or_else(|| refused(n.to_string())),
        Value::Null => Err(refused("null".to_owned())),
        Value::Bool(b) => Err(refused(b.to_string())),
        Value::String(s) => non_finite(s).ok_or_else(|| refused(marks.repr(value))),
        other => Err(refused(marks.repr(other))),
    }
}

/// Names of a line compared with each other pair by pair; beyond this, through a set.
const FEW_METRICS: usize = 16;

/// A line as most lines are: the three keys once each, plain numbers, names that are names.
/// Anything else fails here and is decoded again by `parse_exactly`, which says why.
#[derive(Deserialize)]
struct Plain<'a> {
    step: i64,
    wall_time: f64,
    #[serde(borrow)]
    metrics: PlainMetrics<'a>,
}

struct PlainMetrics<'a>(Vec<(Cow<'a, str>, f64)>);

impl<'de: 'a, 'a> Deserialize<'de> for PlainMetrics<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Pairs<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for Pairs<'a> {
            type Value = PlainMetrics<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object of name: number")
            }
            fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
                let mut pairs: Vec<(Cow<'a, str>, f64)> = Vec::new();
                // A line's few names are compared; a line of many (a hostile one: a 4 MiB
                // line holds some 500 000) is checked through a set, never pair by pair.
                let mut names: HashSet<Cow<'a, str>> = HashSet::new();
                while let Some((name, value)) = map.next_entry::<Cow<'a, str>, f64>()? {
                    if pairs.len() == FEW_METRICS {
                        names.extend(pairs.iter().map(|(seen, _)| seen.clone()));
                    }
                    let repeated = if pairs.len() < FEW_METRICS {
                        pairs.iter().any(|(seen, _)| *seen == name)
                    } else {
                        !names.insert(name.clone())
                    };
                    if repeated || name_problem(&name).is_some() {
                        return Err(de::Error::custom("not a plain line"));
                    }
                    pairs.push((name, value));
                }
                Ok(PlainMetrics(pairs))
            }
        }
        deserializer.deserialize_map(Pairs(std::marker::PhantomData))
    }
}

/// One line's step, wall time and metrics, or why it is not a metric line.
pub fn parse_line(raw: &[u8]) -> Result<Line, LineError> {
    // Most lines: the fast path, before anything else is looked at (it skips keys it
    // ignores without recursing, however deep they nest).
    if let Some(line) = parse_plain(raw, false) {
        return Ok(line);
    }
    let depth = nesting(raw);
    if depth <= SERDE_NESTING {
        return parse_exactly(raw, false);
    }
    if depth > MAX_NESTING {
        return Err(LineError(format!(
            "not JSON: arrays and objects nested {depth} deep, over {MAX_NESTING}"
        )));
    }
    // Read as orjson reads it, on a stack that holds it: never a refusal the Python
    // collector would not make, never a stack overflow.
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .stack_size(DEEP_STACK)
            .spawn_scoped(scope, || parse_at(raw, true))
            .ok()
            .and_then(|decoding| decoding.join().ok())
            .unwrap_or_else(|| Err(LineError("not read: no thread to decode it".to_owned())))
    })
}

fn parse_at(raw: &[u8], deep: bool) -> Result<Line, LineError> {
    parse_plain(raw, deep).map_or_else(|| parse_exactly(raw, deep), Ok)
}

/// The line by the typed fast path, if it is a plain line.
fn parse_plain(raw: &[u8], deep: bool) -> Option<Line> {
    match from_slice::<Plain<'_>>(raw, deep) {
        Ok(plain) if !plain.metrics.0.is_empty() => Some(Line {
            step: plain.step,
            wall_time: plain.wall_time,
            metrics: plain
                .metrics
                .0
                .into_iter()
                .map(|(k, v)| (k.into_owned(), v))
                .collect(),
        }),
        _ => None,
    }
}

/// `parse_line` for any line: every rule checked, and a refusal says which failed.
fn parse_exactly(raw: &[u8], deep: bool) -> Result<Line, LineError> {
    let decoded = decode(raw, deep)?;
    let Value::Object(record) = &decoded.value else {
        return Err(LineError("not a JSON object".to_owned()));
    };
    let marks = decoded.marks();
    let field = |key: &str| (record.get(key), marks.part(|v| v.get(key)));
    let shown = |key: &str| match field(key) {
        (Some(value), marks) => marks.repr(value),
        (None, _) => "None".to_owned(),
    };
    let step = match record.get("step") {
        Some(Value::Number(n)) if n.is_i64() => n.as_i64(),
        _ => None,
    }
    .ok_or_else(|| {
        LineError(format!(
            "'step' must be a 64-bit integer, got {}",
            shown("step")
        ))
    })?;
    let wall_time = match field("wall_time") {
        (Some(Value::Number(n)), _) => n.as_f64(),
        (Some(value), marks) => marks.bare(value),
        (None, _) => None,
    }
    .ok_or_else(|| {
        LineError(format!(
            "'wall_time' must be a number of seconds, got {}",
            shown("wall_time")
        ))
    })?;
    let (metrics, metric_marks) = match field("metrics") {
        (Some(Value::Object(metrics)), marks) if !metrics.is_empty() => (metrics, marks),
        _ => {
            return Err(LineError(
                "'metrics' must be a non-empty object of name: number".to_owned(),
            ))
        }
    };
    if let Some(problem) = metrics.keys().find_map(|name| name_problem(name)) {
        return Err(LineError(format!("metric name {problem}")));
    }
    let seconds = metric_marks.members();
    let metrics = metrics
        .iter()
        .enumerate()
        .map(|(at, (name, value))| {
            let marks = metric_marks.part(|_| seconds.get(at).copied());
            Ok((name.clone(), metric_value(name, value, marks)?))
        })
        .collect::<Result<Vec<_>, LineError>>()?;
    Ok(Line {
        step,
        wall_time,
        metrics,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(raw: &str) -> String {
        parse_line(raw.as_bytes())
            .err()
            .map(|e| e.0)
            .unwrap_or_default()
    }

    #[test]
    fn a_line_gives_its_step_wall_time_and_metrics_in_order() {
        let line = parse_line(br#"{"step": 3, "wall_time": 10.5, "metrics": {"z": 0.25, "a": 2}}"#);
        assert_eq!(
            line,
            Ok(Line {
                step: 3,
                wall_time: 10.5,
                metrics: vec![("z".into(), 0.25), ("a".into(), 2.0)]
            })
        );
    }

    #[test]
    fn non_finite_values_are_kept_bare_or_quoted() {
        for (raw, want) in [
            (
                r#"{"step": 1, "wall_time": 1, "metrics": {"x": NaN}}"#,
                f64::NAN,
            ),
            (
                r#"{"step": 1, "wall_time": 1, "metrics": {"x": -Infinity}}"#,
                f64::NEG_INFINITY,
            ),
            (
                r#"{"step": 1, "wall_time": 1, "metrics": {"x": "inf"}}"#,
                f64::INFINITY,
            ),
            (
                r#"{"step": 1, "wall_time": 1, "metrics": {"x": "NaN", "y": 1}}"#,
                f64::NAN,
            ),
        ] {
            let got = parse_line(raw.as_bytes()).map(|l| l.metrics[0].1);
            assert!(
                matches!(got, Ok(v) if v == want || (v.is_nan() && want.is_nan())),
                "{raw}"
            );
        }
        let quoted = r#"{"step": 1, "wall_time": 1, "metrics": {"NaN here": 1, "s": "a NaN"}}"#;
        assert_eq!(refusal(quoted), "metric 's' is 'a NaN', not a number");
    }

    #[test]
    fn malformed_lines_are_refused_with_a_reason() {
        assert!(refusal("garbage").starts_with("not JSON: "));
        assert_eq!(refusal("[1, 2]"), "not a JSON object");
        assert_eq!(
            refusal(r#"{"step": 1.5, "wall_time": 1, "metrics": {"x": 1}}"#),
            "'step' must be a 64-bit integer, got 1.5"
        );
        assert!(
            refusal(r#"{"step": 9223372036854775808, "wall_time": 1, "metrics": {"x": 1}}"#)
                .starts_with("'step' must be a 64-bit integer")
        );
        assert_eq!(
            refusal(r#"{"step": true, "wall_time": 1, "metrics": {"x": 1}}"#),
            "'step' must be a 64-bit integer, got True"
        );
        assert_eq!(
            refusal(r#"{"step": 1, "metrics": {"x": 1}}"#),
            "'wall_time' must be a number of seconds, got None"
        );
        assert_eq!(
            refusal(r#"{"step": 1, "wall_time": 1, "metrics": {}}"#),
            "'metrics' must be a non-empty object of name: number"
        );
        assert_eq!(
            refusal(r#"{"step": 1, "wall_time": 1, "metrics": {"x": null}}"#),
            "metric 'x' is null, not a number"
        );
        assert_eq!(
            refusal(r#"{"step": 1, "wall_time": 1, "metrics": {"x": [1]}}"#),
            "metric 'x' is [1], not a number"
        );
        assert_eq!(
            refusal(r#"{"step": 1, "wall_time": 1, "metrics": {"": 1}}"#),
            "metric name is empty"
        );
    }

    /// A line of `count` metrics named m0, m1, ..., the last one named again if `repeat`.
    fn many_metrics(count: usize, repeat: bool) -> Vec<u8> {
        let mut names: Vec<String> = (0..count).map(|i| format!("\"m{i}\": {i}")).collect();
        if repeat {
            names.push(format!("\"m{}\": -1", count - 1));
        }
        format!(
            r#"{{"step": 1, "wall_time": 1, "metrics": {{{}}}}}"#,
            names.join(", ")
        )
        .into_bytes()
    }

    #[test]
    fn a_line_of_very_many_metrics_is_read_in_linear_time() {
        // 200 000 names compared pair by pair were 2e10 comparisons (minutes); a hostile
        // line of a few MiB must cost about what its bytes do.
        let started = std::time::Instant::now();
        let line = parse_line(&many_metrics(200_000, false));
        assert_eq!(line.map(|l| l.metrics.len()), Ok(200_000));
        let repeated = parse_line(&many_metrics(200_000, true));
        let last = repeated.map(|l| (l.metrics.len(), l.metrics.last().map(|m| m.1)));
        assert_eq!(last, Ok((200_000, Some(-1.0))));
        assert!(started.elapsed().as_secs() < 20, "{:?}", started.elapsed());
    }

    #[test]
    fn a_repeated_name_is_read_as_python_reads_it_however_many_names() {
        for count in [2, FEW_METRICS - 1, FEW_METRICS, FEW_METRICS + 1, 40] {
            let got = parse_line(&many_metrics(count, true)).map(|l| {
                let last = l.metrics.last().cloned();
                (l.metrics.len(), last)
            });
            assert_eq!(got, Ok((count, Some((format!("m{}", count - 1), -1.0)))));
        }
    }

    fn nested(depth: usize, inner: &str) -> Vec<u8> {
        format!("{}{inner}{}", "[".repeat(depth), "]".repeat(depth)).into_bytes()
    }

    #[test]
    fn a_line_nested_as_deep_as_orjson_reads_is_read() {
        // orjson (the Python reader's decoder) reads 1024 levels; serde_json stopped at 128.
        for (depth, bare) in [(126, ""), (127, "NaN"), (200, "NaN"), (MAX_NESTING - 1, "")] {
            let deep = nested(depth, r#""x\"]]""#);
            let line = [
                br#"{"step": 1, "wall_time": 1, "metrics": {"x": 1"#.as_slice(),
                if bare.is_empty() {
                    b""
                } else {
                    br#", "y": NaN"#
                },
                br#"}, "deep": "#,
                &deep,
                b"}",
            ]
            .concat();
            let got = parse_line(&line).map(|l| l.metrics.len());
            assert_eq!(got, Ok(if bare.is_empty() { 1 } else { 2 }), "{depth}");
        }
        let mut step = br#"{"wall_time": 1, "metrics": {"x": 1}, "step": "#.to_vec();
        step.extend_from_slice(&nested(600, "1"));
        step.push(b'}');
        let said = refusal(&String::from_utf8_lossy(&step));
        let shown = format!("{}1{}", "[".repeat(600), "]".repeat(600));
        assert_eq!(
            said,
            format!("'step' must be a 64-bit integer, got {shown}")
        );
    }

    #[test]
    fn a_line_nested_deeper_than_orjson_reads_is_refused() {
        let mut line = br#"{"step": 1, "wall_time": 1, "metrics": {"x": NaN}, "deep": "#.to_vec();
        line.extend_from_slice(&nested(100_000, ""));
        line.push(b'}');
        assert_eq!(
            refusal(&String::from_utf8_lossy(&line)),
            "not JSON: arrays and objects nested 100001 deep, over 1024"
        );
        assert!(refusal(&"[".repeat(2000)).starts_with("not JSON: "));
        // The fast path skips what it ignores without recursing: a plain line is read.
        let mut plain = br#"{"step": 1, "wall_time": 1, "metrics": {"x": 1}, "deep": "#.to_vec();
        plain.extend_from_slice(&nested(100_000, ""));
        plain.push(b'}');
        assert_eq!(parse_line(&plain).map(|l| l.metrics.len()), Ok(1));
    }

    #[test]
    fn bare_tokens_are_shown_as_python_shows_them_and_no_string_reads_as_one() {
        // What the Python reader says of each (tuneplane.collector.jsonl.parse_line).
        for (raw, said) in [
            (
                r#"{"step": NaN, "wall_time": 1, "metrics": {"x": 1}}"#,
                "'step' must be a 64-bit integer, got nan",
            ),
            (
                r#"{"step": 1, "wall_time": 1, "metrics": {"x": [NaN, -Infinity, {"a": Infinity}]}}"#,
                "metric 'x' is [nan, -inf, {'a': inf}], not a number",
            ),
            (
                r#"{"step": 1, "wall_time": 1, "metrics": {"x": "\u0000NaN"}}"#,
                "metric 'x' is '\\x00NaN', not a number",
            ),
            (
                r#"{"step": 1, "wall_time": 1, "metrics": {"y": NaN, "x": "\u0000NaN"}}"#,
                "metric 'x' is '\\x00NaN', not a number",
            ),
            (
                r#"{"step": 1, "wall_time": "\u0000Infinity", "metrics": {"x": 1}}"#,
                "'wall_time' must be a number of seconds, got '\\x00Infinity'",
            ),
            (
                r#"{"step": 1, "wall_time": "\u0000Infinity", "metrics": {"x": NaN}}"#,
                "'wall_time' must be a number of seconds, got '\\x00Infinity'",
            ),
            (
                r#"{"step": [NaN, "\u0000NaN"], "wall_time": 1, "metrics": {"x": NaN}}"#,
                "'step' must be a 64-bit integer, got [nan, '\\x00NaN']",
            ),
        ] {
            assert_eq!(refusal(raw), said, "{raw}");
        }
        let key = refusal(r#"{"step": 1, "wall_time": 1, "metrics": {NaN: 1}}"#);
        assert!(key.starts_with("not JSON: "), "{key}");
        let both =
            parse_line(br#"{"step": 1, "wall_time": NaN, "metrics": {"x": NaN, "s": "\u0000"}}"#);
        assert!(both.is_err());
        let fine =
            parse_line(br#"{"step": 1, "wall_time": -Infinity, "metrics": {"\u0000x": NaN}}"#);
        assert!(
            fine.is_err(),
            "a control character in a name is refused either way"
        );
        let read =
            parse_line(br#"{"step": 1, "wall_time": -Infinity, "metrics": {"x": NaN, "y": 2}}"#)
                .map(|l| (l.wall_time, l.metrics.len(), l.metrics[0].1.is_nan()));
        assert_eq!(read, Ok((f64::NEG_INFINITY, 2, true)));
    }

    #[test]
    fn blank_lines_are_python_blank() {
        assert!(is_blank(b" \t\r\x0b\x0c"));
        assert!(!is_blank(b" x "));
    }
}
