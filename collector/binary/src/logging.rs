//! The collector's log on standard error, one line a message: time (UTC), level and what
//! happened, as the rest of the project logs (`2026-12-01T21:25:00.123Z WARNING
//! tuneplane.collector ...`).

use std::io::Write;

use log::{Level, LevelFilter, Log, Metadata, Record};

struct Stderr;

impl Log for Stderr {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.level() <= log::max_level()
    }

    fn log(&self, record: &Record<'_>) {
        if !self.enabled(record.metadata()) {
            return;
        }
        let level = match record.level() {
            Level::Error => "ERROR",
            Level::Warn => "WARNING",
            Level::Info => "INFO",
            Level::Debug | Level::Trace => "DEBUG",
        };
        let now = humantime::format_rfc3339_millis(std::time::SystemTime::now());
        // One write a line, so lines of threads never interleave.
        let line = format!("{now} {level} tuneplane.collector {}\n", record.args());
        let _ = std::io::stderr().lock().write_all(line.as_bytes());
    }

    fn flush(&self) {}
}

/// `level` as Python's logging names it (DEBUG, INFO, WARNING, ERROR), any case.
pub fn level_of(level: &str) -> Option<LevelFilter> {
    match level.to_ascii_uppercase().as_str() {
        "DEBUG" => Some(LevelFilter::Debug),
        "INFO" => Some(LevelFilter::Info),
        "WARNING" | "WARN" => Some(LevelFilter::Warn),
        "ERROR" | "CRITICAL" => Some(LevelFilter::Error),
        _ => None,
    }
}

/// Logs at `given` (as `--loglevel` names it) from now on; or why `given` is no level.
pub fn start(given: &str) -> Result<(), String> {
    let level = level_of(given)
        .ok_or_else(|| format!("--loglevel {given:?} is not DEBUG, INFO, WARNING or ERROR"))?;
    init(level);
    Ok(())
}

fn init(level: LevelFilter) {
    static LOGGER: Stderr = Stderr;
    if log::set_logger(&LOGGER).is_ok() {
        log::set_max_level(level);
    }
}
