//! Python's bare `NaN`, `Infinity` and `-Infinity` in a JSONL line. JSON has no such
//! tokens, so they are written as marker strings before decoding, and `Marks` tells which
//! strings of the decoded value stand for them: a string of the line itself never reads as
//! one, and a value is shown with them as Python shows it (as floats).

use serde_json::Value;

use crate::sources::repr::{py_float, py_repr, py_str};

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

/// How a decoded value may hold bare tokens: not at all (the line decoded as it is), as
/// first markers no string of the line can forge, or as first markers that are bare tokens
/// only where the second decoding holds a second marker (the value there given).
#[derive(Clone, Copy)]
pub(super) enum Marks<'a> {
    Plain,
    Quoted,
    Twice(&'a Value),
}

/// Where nothing corresponds in the second decoding (never a marker).
static NOTHING: Value = Value::Null;

impl<'a> Marks<'a> {
    /// The marks of a part of the value, `pick` finding it in the second decoding.
    pub(super) fn part(self, pick: impl FnOnce(&'a Value) -> Option<&'a Value>) -> Self {
        match self {
            Self::Twice(second) => Self::Twice(pick(second).unwrap_or(&NOTHING)),
            other => other,
        }
    }

    /// The number of the bare token `value` stands for, if it is one.
    pub(super) fn bare(self, value: &Value) -> Option<f64> {
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
    pub(super) fn repr(self, value: &Value) -> String {
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
    pub(super) fn elements(self) -> Vec<&'a Value> {
        match self {
            Self::Twice(Value::Array(items)) => items.iter().collect(),
            _ => Vec::new(),
        }
    }

    /// The second decoding's member values of this object, in order (empty unless `Twice`).
    pub(super) fn members(self) -> Vec<&'a Value> {
        match self {
            Self::Twice(Value::Object(map)) => map.values().collect(),
            _ => Vec::new(),
        }
    }

    /// Whether a bare token stands where a name must be (no JSON to Python's `json.loads`).
    pub(super) fn bare_key(self, value: &Value) -> bool {
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
pub(super) fn quote_bare_tokens(raw: &[u8], which: usize) -> Vec<u8> {
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
