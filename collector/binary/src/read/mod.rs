//! `tuneplane-collector read PATH...`: every record of each path decoded (JSONL for a
//! `*.jsonl` file, TensorBoard for a log directory or an event file), one JSON object a line
//! on standard output, config entries (`config`) too; each damaged or incomplete record, and
//! each config entry skipped, said on standard error with its file and its line or offset.

mod config;
mod jsonl;
mod summary;
mod tensorboard;

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use serde::Serialize;
use serde_json::{json, Value};

/// A number as the JSON output writes it: JSON has no NaN or infinities, so "nan", "inf".
pub fn json_number(value: f64) -> Value {
    if value.is_nan() {
        json!("nan")
    } else if value.is_infinite() {
        json!(if value > 0.0 { "inf" } else { "-inf" })
    } else {
        json!(value)
    }
}

/// A path as Python's `pathlib` shows it: no empty or `.` segments.
pub fn shown(path: &str) -> String {
    let parts: Vec<&str> = path
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    let joined = parts.join("/");
    match (path.starts_with('/'), joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".to_owned(),
        (false, false) => joined,
    }
}

/// A number as the JSON output writes it: JSON has no NaN or infinities, so "nan", "inf".
#[derive(Serialize)]
#[serde(untagged)]
pub enum JsonNumber {
    Finite(f64),
    Named(&'static str),
}

impl JsonNumber {
    pub fn of(value: f64) -> Self {
        match json_number(value) {
            Value::String(_) if value.is_nan() => Self::Named("nan"),
            Value::String(_) if value > 0.0 => Self::Named("inf"),
            Value::String(_) => Self::Named("-inf"),
            _ => Self::Finite(value),
        }
    }
}

/// `O_NONBLOCK` (the same on x86_64 and aarch64 Linux): opening a FIFO must not wait for
/// a writer.
const O_NONBLOCK: i32 = 0o4000;

/// `path` opened for reading if it is a regular file (after any symbolic link); `None` for
/// anything else. A job may name a FIFO, a device or a link to one (`/dev/zero`) as an
/// event file: opening a FIFO waits for a writer forever, a device's bytes never end.
pub fn open_regular(path: &Path) -> io::Result<Option<File>> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(O_NONBLOCK)
        .open(path)?;
    Ok(file.metadata()?.is_file().then_some(file))
}

/// Whether `read` takes `path` as a JSONL metric file (else as TensorBoard's).
fn is_jsonl(path: &Path) -> bool {
    path.is_file() && path.extension().is_some_and(|e| e == "jsonl")
}

/// Writes one record as a JSON line.
pub fn emit(out: &mut impl Write, record: &impl Serialize) -> io::Result<()> {
    serde_json::to_writer(&mut *out, record)?;
    out.write_all(b"\n")
}

/// The command: 0 when every path was read, 1 when one could not be; with `summary`, each
/// path's summary instead of its records.
pub fn read(paths: &[String], summary: bool) -> i32 {
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    let mut problems = io::stderr();
    let mut status = 0;
    for given in paths {
        let path = Path::new(given);
        let shown_path = shown(given);
        let outcome = if !path.exists() {
            Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("{shown_path}: no such file or directory"),
            ))
        } else if summary {
            summary::write(path, &shown_path, is_jsonl(path), &mut out, &mut problems)
        } else if is_jsonl(path) {
            jsonl::records(path, &shown_path, &mut out, &mut problems)
        } else {
            tensorboard::records(path, &shown_path, &mut out, &mut problems)
        };
        match outcome {
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => return status,
            Err(e) => {
                let _ = writeln!(problems, "tuneplane-collector read: {e}");
                status = 1;
            }
            Ok(()) => {}
        }
    }
    match out.flush() {
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => {
            let _ = writeln!(problems, "tuneplane-collector read: {e}");
            1
        }
        _ => status,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_shown_as_pathlib_shows_them() {
        assert_eq!(shown("./a//b/./m.jsonl"), "a/b/m.jsonl");
        assert_eq!(shown("/x/"), "/x");
        assert_eq!(shown("./"), ".");
    }

    #[test]
    fn non_finite_numbers_are_written_as_strings() {
        assert_eq!(json_number(f64::NAN), json!("nan"));
        assert_eq!(json_number(f64::NEG_INFINITY), json!("-inf"));
        assert_eq!(json_number(0.5), json!(0.5));
    }
}
