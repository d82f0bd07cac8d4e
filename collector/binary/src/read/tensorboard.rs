//! `read` of a TensorBoard log directory or event file: each file framed and decoded from
//! its start, a run's files in name order sharing what TensorBoard purges by.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::Path;

use serde::Serialize;
use serde_json::json;

use super::{emit, JsonNumber};
use crate::logdir;
use crate::sources::tensorboard::events::{decode, Plugins, PurgeState};
use crate::sources::tensorboard::framing::{scan, Scan};

/// A scalar of an event, as `read` prints it (the hot path: no map built per record).
#[derive(Serialize)]
struct EventScalar<'a> {
    kind: &'static str,
    file: &'a str,
    offset: u64,
    tag: &'a str,
    step: i64,
    wall_time: f64,
    value: JsonNumber,
}

/// One read's worth of an event file.
const READ_BYTES: u64 = 8 * 1024 * 1024;

/// Reads up to `limit` bytes from `file` at `offset`.
fn read_at(file: &mut File, offset: u64, limit: u64) -> io::Result<Vec<u8>> {
    file.seek(SeekFrom::Start(offset))?;
    let mut buffer = Vec::new();
    file.take(limit).read_to_end(&mut buffer)?;
    Ok(buffer)
}

/// A read's worth from `offset` framed (or one record larger than that): the buffer's
/// bytes and what the scan found in them.
fn frame_at(file: &mut File, offset: u64) -> io::Result<(Vec<u8>, Scan)> {
    let mut buffer = read_at(file, offset, READ_BYTES)?;
    let mut found = scan(&buffer, offset);
    if found.wanted > buffer.len() - found.consumed {
        let more = read_at(file, offset + found.consumed as u64, found.wanted as u64)?;
        if more.len() == found.wanted {
            buffer.truncate(found.consumed);
            buffer.extend_from_slice(&more);
            found = scan(&buffer, offset);
        }
    }
    Ok((buffer, found))
}

fn file_records(
    path: &Path,
    relative: &str,
    state: &mut PurgeState,
    out: &mut impl Write,
    problems: &mut impl Write,
) -> io::Result<()> {
    let mut file = File::open(path)?;
    let mut plugins = Plugins::new();
    let mut offset = 0u64;
    loop {
        let (buffer, found) = frame_at(&mut file, offset)?;
        for damage in &found.damage {
            writeln!(problems, "{relative}@{}: {}", damage.offset, damage.reason)?;
        }
        for record in &found.records {
            let data = buffer
                .get(record.start..record.start + record.length)
                .unwrap_or_default();
            let event = decode(data, relative, record.offset, &mut plugins, state);
            for problem in &event.problems {
                writeln!(problems, "{problem}")?;
            }
            let (at, step, wall) = (record.offset, event.step, event.wall_time);
            for (tag, value) in &event.scalars {
                let value = JsonNumber::of(*value);
                let scalar = EventScalar {
                    kind: "scalar",
                    file: relative,
                    offset: at,
                    tag,
                    step,
                    wall_time: wall,
                    value,
                };
                emit(out, &scalar)?;
            }
            for rich in &event.rich {
                emit(
                    out,
                    &json!({"kind": rich.kind.name(), "file": relative, "offset": at,
                                  "tag": rich.tag, "step": step, "wall_time": wall,
                                  "plugin": rich.plugin, "bytes": rich.bytes}),
                )?;
            }
            for marker in &event.markers {
                let record = if marker.tags.is_empty() {
                    json!({"kind": "session_start", "file": relative, "offset": at,
                           "step": step, "wall_time": wall})
                } else {
                    json!({"kind": "out_of_order_step", "tags": marker.tags, "file": relative,
                           "offset": at, "step": step, "wall_time": wall})
                };
                emit(out, &record)?;
            }
        }
        if found.consumed == 0 {
            if !buffer.is_empty() {
                writeln!(
                    problems,
                    "{relative}@{offset}: incomplete last record ({} bytes); not read",
                    buffer.len()
                )?;
            }
            return Ok(());
        }
        offset += found.consumed as u64;
    }
}

/// Writes the records of the log directory or event file `root`.
pub fn records(
    root: &Path,
    shown_root: &str,
    out: &mut impl Write,
    problems: &mut impl Write,
) -> io::Result<()> {
    let listing = logdir::event_files(root);
    for problem in &listing.problems {
        writeln!(problems, "{problem}")?;
    }
    if listing.files.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("{shown_root}: no *tfevents* files"),
        ));
    }
    // A run's files are read in name order, as TensorBoard reads them.
    let mut runs: HashMap<String, PurgeState> = HashMap::new();
    for path in &listing.files {
        let relative = match path.strip_prefix(root) {
            Ok(below) if path != root => below.to_string_lossy().into_owned(),
            _ => path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
        };
        let run = relative
            .rsplit_once('/')
            .map(|(run, _)| run.to_owned())
            .unwrap_or_default();
        file_records(path, &relative, runs.entry(run).or_default(), out, problems)?;
    }
    Ok(())
}
