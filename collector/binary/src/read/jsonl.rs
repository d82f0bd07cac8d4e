//! `read` of one JSONL metric file.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::Path;

use serde::Serialize;

use super::config::{self, Declared};
use super::{emit, open_regular, JsonNumber};
use crate::sources::config::KeyBudget;
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
    /// null when the line gives none (the collector's `run` stamps it when it reads it).
    wall_time: Option<f64>,
    value: JsonNumber,
}

/// A line this long or longer (not counting its newline) is over the bound, said and
/// skipped: a read's worth.
pub const READ_BYTES: u64 = 4 * 1024 * 1024;

/// Consumes the rest of a line through its newline: the bytes before the newline, or
/// `None` if the file ends first (the line is not complete).
fn skip_line(reader: &mut impl BufRead) -> io::Result<Option<u64>> {
    let mut skipped = 0u64;
    loop {
        let chunk = reader.fill_buf()?;
        if chunk.is_empty() {
            return Ok(None);
        }
        if let Some(at) = chunk.iter().position(|&b| b == b'\n') {
            reader.consume(at + 1);
            return Ok(Some(skipped + at as u64));
        }
        let size = chunk.len();
        skipped += size as u64;
        reader.consume(size);
    }
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
    let Some(file) = open_regular(path)? else {
        writeln!(problems, "{shown_path}: not a regular file; not read")?;
        return Ok(());
    };
    let mut reader = BufReader::new(file);
    let (mut offset, mut number) = (0u64, 0u64);
    let mut keys = KeyBudget::default();
    let mut raw = Vec::new();
    loop {
        raw.clear();
        // A line is held up to the bound only: a line of gigabytes (or a file of them with
        // no newline) is passed over, never read into memory.
        if (&mut reader).take(READ_BYTES).read_until(b'\n', &mut raw)? == 0 {
            return Ok(());
        }
        number += 1;
        if raw.last() != Some(&b'\n') {
            let rest = if raw.len() as u64 == READ_BYTES {
                skip_line(&mut reader)?
            } else {
                None
            };
            let Some(rest) = rest else {
                writeln!(
                    problems,
                    "{shown_path}:{number}: incomplete last line; not read"
                )?;
                return Ok(());
            };
            let length = READ_BYTES + rest;
            writeln!(
                problems,
                "{shown_path}:{number}: line of {length} bytes, over the {READ_BYTES} byte \
                 bound; skipped"
            )?;
            offset += length + 1;
            continue;
        }
        if !is_blank(&raw) {
            match parse_line(&raw) {
                Err(refused) => writeln!(problems, "{shown_path}:{number}: {refused}")?,
                Ok(line) => {
                    // A non-finite wall time is written null (JSON has no NaN).
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
                    for why in &line.skipped {
                        writeln!(problems, "{shown_path}:{number}: {why}; skipped")?;
                    }
                    let declared = Declared {
                        file: &name,
                        offset,
                        line: Some(number),
                        run_path: "",
                        wall_time: line.wall_time,
                        origin: "jsonl",
                    };
                    let keys = (&mut keys, shown_path);
                    let at = format_args!("{shown_path}:{number}");
                    config::write(line.config, &declared, keys, at, out, problems)?;
                }
            }
        }
        offset += raw.len() as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_file(bytes: &[u8], name: &str) -> (String, String) {
        let dir = std::env::temp_dir().join(format!("rreview-jsonl-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap_or_default();
        let path = dir.join("m.jsonl");
        std::fs::write(&path, bytes).unwrap_or_default();
        let (mut out, mut problems) = (Vec::new(), Vec::new());
        let done = records(&path, "m.jsonl", &mut out, &mut problems);
        let _ = std::fs::remove_dir_all(&dir);
        assert!(done.is_ok());
        (
            String::from_utf8_lossy(&out).into_owned(),
            String::from_utf8_lossy(&problems).into_owned(),
        )
    }

    #[test]
    fn a_line_over_the_bound_is_said_and_skipped_and_the_rest_read() {
        let good = br#"{"step": 1, "wall_time": 1, "metrics": {"x": 1}}"#;
        let bound = READ_BYTES as usize;
        // A valid line padded to the bound, then one just under it, then a good one.
        let mut over = good.to_vec();
        over.resize(bound, b' ');
        let mut under = good.to_vec();
        under.resize(bound - 1, b' ');
        let bytes = [&over[..], b"\n", &under, b"\n", good, b"\n"].concat();
        let (out, problems) = read_file(&bytes, "over");
        assert_eq!(
            problems,
            format!("m.jsonl:1: line of {bound} bytes, over the {bound} byte bound; skipped\n")
        );
        let offsets: Vec<&str> = out.lines().collect();
        assert_eq!(offsets.len(), 2, "{out}");
        assert!(offsets[0].contains(&format!(r#""offset":{},"line":2,"#, bound + 1)));
        assert!(offsets[1].contains(&format!(r#""offset":{},"line":3,"#, 2 * bound + 1)));
    }

    #[test]
    fn an_endless_line_is_incomplete_however_long() {
        let mut bytes = br#"{"step": 1, "wall_time": 1, "metrics": {"x": 1}}"#.to_vec();
        bytes.push(b'\n');
        bytes.resize(bytes.len() + 3 * READ_BYTES as usize, b' ');
        let (out, problems) = read_file(&bytes, "endless");
        assert_eq!(out.lines().count(), 1);
        assert_eq!(problems, "m.jsonl:2: incomplete last line; not read\n");
    }
}
