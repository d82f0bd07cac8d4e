//! JSONL metric lines, decoded from bytes with no I/O (the rules the services and the
//! conformance suite hold it to):
//!
//! ```text
//! {"step": 120, "wall_time": 1732867200.5, "metrics": {"loss": 0.31, "lr": 3e-4}}
//! ```
//!
//! `step` is a 64-bit integer, `wall_time` seconds since the Unix epoch (or absent, or
//! null: as W&B and MLflow users log, the collector then stamps the line with its clock when
//! it reads it, and says so), each metric a number; `NaN`, `Infinity` and `-Infinity` are taken as bare tokens (as Python's
//! `json.dumps` writes them) or as strings. A malformed line is a `LineError` saying why.
//!
//! A line may also declare config (`config`), with its metrics or alone
//! (`{"config": {"optimizer": {"lr": 0.1}}}`, which needs no step): its settings are read
//! by `config`, and a setting that cannot be sent is skipped, said, the rest of the line kept.
//!
//! Most lines are read by the typed fast path (`plain`); any other is decoded to a value
//! (`decode`, with the bare tokens as `marks`) and checked rule by rule by `parse_exactly`.

mod config;
mod decode;
mod marks;
mod plain;

use serde_json::Value;
use thiserror::Error;

use crate::sources::config::Setting;
use crate::sources::names::name_problem;
use crate::sources::repr::py_str;
pub use config::declared_by;
use decode::{decode, nesting, DEEP_STACK, MAX_NESTING, SERDE_NESTING};
use marks::Marks;
use plain::parse_plain;

/// Why a line was not read; shown after its file and line number.
#[derive(Debug, Error, PartialEq)]
#[error("{0}")]
pub struct LineError(pub String);

/// One line's columns.
#[derive(Debug, Default, PartialEq)]
pub struct Line {
    /// 0 on a line of config alone.
    pub step: i64,
    /// None: the line gives none (absent or null).
    pub wall_time: Option<f64>,
    pub metrics: Vec<(String, f64)>,
    /// The settings of its config record, if it has one.
    pub config: Vec<Setting>,
    /// Why each part of its config record that is skipped was.
    pub skipped: Vec<String>,
}

/// The strings a metric may be written as for a non-finite value.
fn non_finite(text: &str) -> Option<f64> {
    match text {
        "NaN" | "nan" => Some(f64::NAN),
        "Infinity" | "inf" => Some(f64::INFINITY),
        "-Infinity" | "-inf" => Some(f64::NEG_INFINITY),
        _ => None,
    }
}

/// Whether Python's `bytes.strip()` leaves nothing of `raw`: a blank line, skipped.
pub fn is_blank(raw: &[u8]) -> bool {
    raw.iter()
        .all(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c))
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
    // Read as orjson reads it, on a stack that holds it: never a refusal of a line Python's
    // decoders read, never a stack overflow.
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
    let (config, config_marks) = field("config");
    let config = config::declared(config, config_marks);
    if matches!(record.get("metrics"), None | Some(Value::Null)) {
        match config {
            Some(Err(why)) => return Err(LineError(why)),
            Some(Ok(declared)) => {
                return Ok(Line {
                    wall_time: wall_time(field("wall_time"), &shown)?,
                    config: declared.settings,
                    skipped: declared.skipped,
                    ..Line::default()
                })
            }
            None => {}
        }
    }
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
    let wall_time = wall_time(field("wall_time"), &shown)?;
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
    let (config, skipped) = match config {
        None => (Vec::new(), Vec::new()),
        Some(Ok(declared)) => (declared.settings, declared.skipped),
        Some(Err(why)) => (Vec::new(), vec![why]),
    };
    Ok(Line {
        step,
        wall_time,
        metrics,
        config,
        skipped,
    })
}

/// A line's wall time (`field`: its value and marks), `shown` as the line holds it.
fn wall_time(
    field: (Option<&Value>, Marks<'_>),
    shown: &dyn Fn(&str) -> String,
) -> Result<Option<f64>, LineError> {
    Ok(match field {
        (None | Some(Value::Null), _) => None,
        (Some(Value::Number(n)), _) => n.as_f64(),
        (Some(value), marks) => Some(marks.bare(value).ok_or_else(|| {
            LineError(format!(
                "'wall_time' must be a number of seconds, got {}",
                shown("wall_time")
            ))
        })?),
    })
}

#[cfg(test)]
mod tests;
