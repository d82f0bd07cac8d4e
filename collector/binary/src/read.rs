//! `tuneplane-collector read PATH...`: every record of each path decoded, one JSON object a
//! line on standard output, as the services' tools and the conformance suite read them;
//! each damaged or incomplete line said on standard error with its file and line.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Write};
use std::path::Path;

use serde_json::{json, Value};

use crate::sources::jsonl::{is_blank, parse_line};

/// A number as the JSON output writes it: JSON has no NaN or infinities, so "nan", "inf".
fn json_number(value: f64) -> Value {
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

/// Writes `path`'s records to `out` and its problems to `problems`.
fn jsonl_records(
    path: &Path,
    shown_path: &str,
    out: &mut impl Write,
    problems: &mut impl Write,
) -> io::Result<()> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut reader = BufReader::new(File::open(path)?);
    let (mut offset, mut number) = (0u64, 0u64);
    let mut raw = Vec::new();
    loop {
        raw.clear();
        if reader.read_until(b'\n', &mut raw)? == 0 {
            return Ok(());
        }
        number += 1;
        if raw.last() != Some(&b'\n') {
            writeln!(
                problems,
                "{shown_path}:{number}: incomplete last line; not read"
            )?;
            return Ok(());
        }
        if !is_blank(&raw) {
            match parse_line(&raw) {
                Err(refused) => writeln!(problems, "{shown_path}:{number}: {refused}")?,
                Ok(line) => {
                    // A non-finite wall time is written null, as the Python reader writes it.
                    for (tag, value) in &line.metrics {
                        let record = json!({"kind": "scalar", "file": name, "offset": offset,
                                            "line": number, "tag": tag, "step": line.step,
                                            "wall_time": line.wall_time,
                                            "value": json_number(*value)});
                        serde_json::to_writer(&mut *out, &record)?;
                        out.write_all(b"\n")?;
                    }
                }
            }
        }
        offset += raw.len() as u64;
    }
}

/// The command: 0 when every path was read, 1 when one could not be.
pub fn read(paths: &[String]) -> i32 {
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
        } else if path.is_file() && path.extension().is_some_and(|e| e == "jsonl") {
            jsonl_records(path, &shown_path, &mut out, &mut problems)
        } else {
            Err(io::Error::other(format!(
                "{shown_path}: TensorBoard event files are not read by this build yet \
                 (JSONL files are); the Python collector's read reads them"
            )))
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
