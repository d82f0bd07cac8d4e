//! `read` of a TensorBoard log directory or event file: each file framed and decoded from
//! its start, a run's files in name order sharing what TensorBoard purges by.

use std::collections::HashMap;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use prost::bytes::Bytes;
use serde::Serialize;
use serde_json::json;

use super::config::{self, Declared};
use super::{emit, open_regular, JsonNumber};
use crate::collect::eventfile::{frame_at, READ_BYTES};
use crate::collect::logdir;
use crate::sources::config::KeyBudget;
use crate::sources::tensorboard::events::{decode, Plugins, PurgeState};

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

/// Reads the event file at `path` (its config keys within `keys`); `Ok(false)` when it
/// could not be opened (said).
fn file_records(
    path: &Path,
    relative: &str,
    (state, keys): (&mut PurgeState, (&mut KeyBudget, &str)),
    out: &mut impl Write,
    problems: &mut impl Write,
) -> io::Result<bool> {
    let mut file = match open_regular(path) {
        Ok(Some(file)) => file,
        Ok(None) => {
            writeln!(problems, "{relative}: not a regular file; not read")?;
            return Ok(true);
        }
        // A link to nowhere, a file the reader may not open: the run's other files are
        // still read.
        Err(e) => {
            writeln!(problems, "{relative}: cannot be opened: {e}; not read")?;
            return Ok(false);
        }
    };
    let mut plugins = Plugins::new();
    let mut offset = 0u64;
    loop {
        let (buffer, found, covered) = frame_at(
            &mut file,
            offset,
            READ_BYTES,
            u64::MAX,
            Vec::new(),
            Vec::new(),
        )?;
        for damage in &found.damage {
            writeln!(problems, "{relative}@{}: {}", damage.offset, damage.reason)?;
        }
        // Records are decoded from views of the buffer: their large fields are not copied.
        let whole = Bytes::from(buffer);
        for record in &found.records {
            let end = record.start.saturating_add(record.length);
            let data = if record.start <= end && end <= whole.len() {
                whole.slice(record.start..end)
            } else {
                Bytes::new()
            };
            let mut event = decode(data, relative, record.offset, &mut plugins, state);
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
                                  "plugin": rich.plugin, "bytes": rich.payload.len()}),
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
            // Only a session start of the HParams plugin declares config.
            if !event.config.is_empty() {
                let declared = Declared {
                    file: relative,
                    offset: at,
                    line: None,
                    run_path: logdir::run_of(relative),
                    wall_time: Some(wall),
                    origin: "hparams",
                };
                let settings = std::mem::take(&mut event.config);
                let keys = (&mut *keys.0, keys.1);
                let place = format_args!("{relative}@{at}");
                config::write(settings, &declared, keys, place, out, problems)?;
            }
        }
        if found.consumed == 0 {
            if covered > 0 {
                writeln!(
                    problems,
                    "{relative}@{offset}: incomplete last record ({covered} bytes); not read"
                )?;
            }
            return Ok(true);
        }
        offset += found.consumed as u64;
    }
}

/// The event files of the log directory or event file `root` (shown as `shown_root`), each
/// with its path below `root`, in the order TensorBoard reads them; problems of the listing
/// said, and no event file at all refused.
pub(super) fn event_files(
    root: &Path,
    shown_root: &str,
    problems: &mut impl Write,
) -> io::Result<Vec<(PathBuf, String)>> {
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
    Ok(listing
        .files
        .into_iter()
        .map(|path| {
            let relative = match path.strip_prefix(root) {
                Ok(below) if path != root => below.to_string_lossy().into_owned(),
                _ => path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
            };
            (path, relative)
        })
        .collect())
}

/// Writes the records of the log directory or event file `root`.
pub fn records(
    root: &Path,
    shown_root: &str,
    out: &mut impl Write,
    problems: &mut impl Write,
) -> io::Result<()> {
    // A run's files are read in name order, as TensorBoard reads them.
    let mut runs: HashMap<String, PurgeState> = HashMap::new();
    let (mut unopened, mut keys) = (0usize, KeyBudget::default());
    for (path, relative) in event_files(root, shown_root, problems)? {
        let state = runs
            .entry(logdir::run_of(&relative).to_owned())
            .or_default();
        let read = (state, (&mut keys, shown_root));
        unopened += usize::from(!file_records(&path, &relative, read, out, problems)?);
    }
    // Said file by file above; the path still counts as not read whole (exit status 1).
    match unopened {
        0 => Ok(()),
        n => Err(io::Error::other(format!(
            "{shown_root}: {n} event files could not be opened"
        ))),
    }
}

#[cfg(test)]
mod tests;
