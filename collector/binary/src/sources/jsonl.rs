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
use crate::sources::repr::{py_repr, py_str};

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

/// Bare non-finite tokens become these strings before decoding (JSON has no such tokens).
const BARE: [(&[u8], &str, f64); 3] = [
    (b"-Infinity", "\u{0}-Infinity", f64::NEG_INFINITY),
    (b"Infinity", "\u{0}Infinity", f64::INFINITY),
    (b"NaN", "\u{0}NaN", f64::NAN),
];

/// The strings a metric may be written as for a non-finite value.
fn non_finite(text: &str) -> Option<f64> {
    match text {
        "NaN" | "nan" => Some(f64::NAN),
        "Infinity" | "inf" => Some(f64::INFINITY),
        "-Infinity" | "-inf" => Some(f64::NEG_INFINITY),
        _ => BARE
            .iter()
            .find(|(_, marker, _)| *marker == text)
            .map(|(_, _, v)| *v),
    }
}

fn bare_marker(text: &str) -> Option<f64> {
    BARE.iter()
        .find(|(_, marker, _)| *marker == text)
        .map(|(_, _, v)| *v)
}

/// `raw` with bare `NaN`/`Infinity`/`-Infinity` outside strings written as marker strings.
fn quote_bare_tokens(raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(raw.len() + 16);
    let (mut at, mut in_string, mut escaped) = (0, false, false);
    while let Some(&byte) = raw.get(at) {
        if in_string {
            in_string = escaped || byte != b'"';
            escaped = !escaped && byte == b'\\';
        } else if byte == b'"' {
            in_string = true;
        } else if let Some((token, marker, _)) = BARE
            .iter()
            .find(|(token, _, _)| raw.get(at..).is_some_and(|r| r.starts_with(token)))
        {
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

fn decode(raw: &[u8], deep: bool) -> Result<Value, LineError> {
    match from_slice(raw, deep) {
        Ok(value) => Ok(value),
        Err(first) => {
            let quoted = quote_bare_tokens(raw);
            from_slice(&quoted, deep).map_err(|_| LineError(format!("not JSON: {first}")))
        }
    }
}

fn metric_value(name: &str, value: &Value) -> Result<f64, LineError> {
    let refused =
        |shown: String| LineError(format!("metric {} is {shown}, not a number", py_str(name)));
    match value {
        Value::Number(n) => n.as_f64().ok_or_else(|| refused(n.to_string())),
        Value::Null => Err(refused("null".to_owned())),
        Value::Bool(b) => Err(refused(b.to_string())),
        Value::String(s) => non_finite(s).ok_or_else(|| refused(py_repr(value))),
        other => Err(refused(py_repr(other))),
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
    let depth = nesting(raw);
    if depth <= SERDE_NESTING {
        return parse_at(raw, false);
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
    match from_slice::<Plain<'_>>(raw, deep) {
        Ok(plain) if !plain.metrics.0.is_empty() => Ok(Line {
            step: plain.step,
            wall_time: plain.wall_time,
            metrics: plain
                .metrics
                .0
                .into_iter()
                .map(|(k, v)| (k.into_owned(), v))
                .collect(),
        }),
        _ => parse_exactly(raw, deep),
    }
}

/// `parse_line` for any line: every rule checked, and a refusal says which failed.
fn parse_exactly(raw: &[u8], deep: bool) -> Result<Line, LineError> {
    let Value::Object(record) = decode(raw, deep)? else {
        return Err(LineError("not a JSON object".to_owned()));
    };
    let shown = |key: &str| record.get(key).map_or_else(|| "None".to_owned(), py_repr);
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
    let wall_time = match record.get("wall_time") {
        Some(Value::Number(n)) => n.as_f64(),
        Some(Value::String(s)) => bare_marker(s),
        _ => None,
    }
    .ok_or_else(|| {
        LineError(format!(
            "'wall_time' must be a number of seconds, got {}",
            shown("wall_time")
        ))
    })?;
    let metrics = match record.get("metrics") {
        Some(Value::Object(metrics)) if !metrics.is_empty() => metrics,
        _ => {
            return Err(LineError(
                "'metrics' must be a non-empty object of name: number".to_owned(),
            ))
        }
    };
    if let Some(problem) = metrics.keys().find_map(|name| name_problem(name)) {
        return Err(LineError(format!("metric name {problem}")));
    }
    let metrics = metrics
        .iter()
        .map(|(name, value)| Ok((name.clone(), metric_value(name, value)?)))
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
        let mut line = br#"{"step": 1, "wall_time": 1, "metrics": {"x": 1}, "deep": "#.to_vec();
        line.extend_from_slice(&nested(100_000, ""));
        line.push(b'}');
        assert_eq!(
            refusal(&String::from_utf8_lossy(&line)),
            "not JSON: arrays and objects nested 100001 deep, over 1024"
        );
        assert!(refusal(&"[".repeat(2000)).starts_with("not JSON: "));
    }

    #[test]
    fn blank_lines_are_python_blank() {
        assert!(is_blank(b" \t\r\x0b\x0c"));
        assert!(!is_blank(b" x "));
    }
}
