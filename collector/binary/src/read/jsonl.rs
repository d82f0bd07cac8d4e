//! `read` of one JSONL metric file.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Write};
use std::path::Path;

use serde::Serialize;

use super::{emit, JsonNumber};
use crate::sources::jsonl::{is_blank, parse_line};

/// A scalar of a JSONL line, as `read` prints it.
#[derive(Serialize)]
struct LineScalar<'a> {
    kind: &'static str,
    file: &'a str,
    offset: u64,
    line: u64,
    tag: &'a str,
    step: i64,
    wall_time: f64,
    value: JsonNumber,
}

/// Writes `path`'s records to `out` and its problems to `problems`.
pub fn records(
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
                        emit(
                            out,
                            &LineScalar {
                                kind: "scalar",
                                file: &name,
                                offset,
                                line: number,
                                tag,
                                step: line.step,
                                wall_time: line.wall_time,
                                value: JsonNumber::of(*value),
                            },
                        )?;
                    }
                }
            }
        }
        offset += raw.len() as u64;
    }
}
