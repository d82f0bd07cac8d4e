//! A JSONL line's bytes as a JSON value, as Python writers mean them: bare tokens
//! quoted into markers when the line does not decode as it is (a `\u0000` escape asking for
//! a second decoding), and nesting bounded where orjson bounds it rather than where
//! serde_json would, so a deep line is read on a stack that holds it.

use serde::Deserialize;
use serde_json::Value;

use super::marks::{quote_bare_tokens, Marks};
use super::LineError;

/// How deep a line's arrays and objects nest at most (outside strings).
pub(super) fn nesting(raw: &[u8]) -> usize {
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
pub(super) const SERDE_NESTING: usize = 127;

/// The nesting orjson reads (Python's `json.loads` raises RecursionError about there): a
/// line nested deeper is refused.
pub const MAX_NESTING: usize = 1024;

/// The stack a line nested up to `MAX_NESTING` deep is decoded with (each level costs
/// serde_json, `py_repr` and the drop of the value a few hundred bytes to a few KiB).
pub(super) const DEEP_STACK: usize = 64 * 1024 * 1024;

/// `T` from `raw`, with serde_json's recursion bound unless `deep`.
pub(super) fn from_slice<'a, T: Deserialize<'a>>(
    raw: &'a [u8],
    deep: bool,
) -> serde_json::Result<T> {
    let mut deserializer = serde_json::Deserializer::from_slice(raw);
    if deep {
        deserializer.disable_recursion_limit();
    }
    let value = T::deserialize(&mut deserializer)?;
    deserializer.end()?;
    Ok(value)
}

/// A line decoded, and how its bare tokens were quoted (the second decoding, if needed).
pub(super) struct Decoded {
    pub(super) value: Value,
    second: Option<Value>,
    quoted: bool,
}

impl Decoded {
    pub(super) fn marks(&self) -> Marks<'_> {
        match (&self.second, self.quoted) {
            (Some(second), _) => Marks::Twice(second),
            (None, true) => Marks::Quoted,
            (None, false) => Marks::Plain,
        }
    }
}

pub(super) fn decode(raw: &[u8], deep: bool) -> Result<Decoded, LineError> {
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
