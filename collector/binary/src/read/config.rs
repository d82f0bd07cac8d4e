//! A config entry as `read` prints it: where it was declared (file, offset, and line of a
//! JSONL file; the run of an event file), its key, its value as JSON types it (a number, a
//! text as a string, a flag as a boolean), its wall time and its origin, as the batch's
//! `ConfigEntry` would hold them. The key budget of a source is the path's.

use std::fmt::Display;
use std::io::{self, Write};

use serde::Serialize;

use super::{emit, JsonNumber};
use crate::sources::config::{ConfigValue, KeyBudget, Setting};

#[derive(Serialize)]
#[serde(untagged)]
enum Shown<'a> {
    Number(JsonNumber),
    Text(&'a str),
    Flag(bool),
}

#[derive(Serialize)]
struct ConfigRecord<'a> {
    kind: &'static str,
    file: &'a str,
    offset: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    line: Option<u64>,
    run_path: &'a str,
    key: &'a str,
    value: Shown<'a>,
    /// null when the record gives none (the collector's `run` stamps it when it reads it).
    wall_time: Option<f64>,
    origin: &'static str,
}

/// Where settings were declared, as `read` says it.
pub struct Declared<'a> {
    pub file: &'a str,
    pub offset: u64,
    /// A JSONL line's number.
    pub line: Option<u64>,
    pub run_path: &'a str,
    pub wall_time: Option<f64>,
    /// "hparams" or "jsonl".
    pub origin: &'static str,
}

/// Writes `settings` within the path's key `budget` (`source`: the path as shown); the
/// ones past it are said on `problems` after `at` (formatted only then: most records
/// declare no config, and `read` passes here for each).
pub fn write(
    settings: Vec<Setting>,
    declared: &Declared<'_>,
    (budget, source): (&mut KeyBudget, &str),
    at: impl Display,
    out: &mut impl Write,
    problems: &mut impl Write,
) -> io::Result<()> {
    if settings.is_empty() {
        return Ok(());
    }
    let mut skipped = Vec::new();
    for setting in budget.within(source, settings, &mut skipped) {
        let value = match &setting.value {
            ConfigValue::Number(number) => Shown::Number(JsonNumber::of(*number)),
            ConfigValue::Text(text) => Shown::Text(text),
            ConfigValue::Flag(flag) => Shown::Flag(*flag),
        };
        let record = ConfigRecord {
            kind: "config",
            file: declared.file,
            offset: declared.offset,
            line: declared.line,
            run_path: declared.run_path,
            key: &setting.key,
            value,
            wall_time: declared.wall_time,
            origin: declared.origin,
        };
        emit(out, &record)?;
    }
    for why in skipped {
        writeln!(problems, "{at}: {why}; skipped")?;
    }
    Ok(())
}
