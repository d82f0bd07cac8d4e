//! `read --summary PATH...`: what `run` would collect from each path, without a spool:
//! every series with its points and its step and wall-time ranges, rich records and
//! markers by tag and kind, refused records by reason, and a total, as JSON lines (as
//! `tensorboard --inspect` summarises a log directory). The records are read by the very
//! steps `run` seals (framing, CRC-32C, decoding into the batch's columns, the batch
//! bounds), so what it says is what the collector would send, and its time is what the
//! collector's reading costs.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Write};
use std::path::Path;

use prost::bytes::Bytes;

use super::{emit, open_regular};
use crate::collect::logdir;
use crate::collect::{jsonl, tensorboard, Bounds, Kept, Position};
use crate::contract::MAX_BATCH_BYTES;
use crate::sources::config::KeyBudget;

mod tally;

use tally::{Tally, Total};

/// Points per read step: the batch bound `run` allows at most (a step's size changes no
/// record's fate, only how often the loop turns).
const STEP_POINTS: usize = crate::contract::MAX_BATCH_POINTS;

/// Reads one file step by step to its end; `previous` is its run's last file's saved state
/// (TensorBoard), and the file's own is returned.
fn read_file(
    file: &mut File,
    path: &Path,
    relative: Option<(&str, &str)>,
    (tally, keys): (&mut Tally, &mut KeyBudget),
    problems: &mut impl Write,
) -> io::Result<String> {
    let bounds = Bounds {
        max_points: STEP_POINTS,
        max_bytes: MAX_BATCH_BYTES,
        spool_bytes: u64::MAX,
    };
    let mut position = Position {
        offset: 0,
        line: 1,
        state: String::new(),
    };
    let mut kept = Kept::default();
    loop {
        let (mut step, records) = match relative {
            Some((relative, previous)) => {
                let source = ("", &mut *keys);
                tensorboard::read(
                    file, relative, source, &position, bounds, previous, &mut kept,
                )?
            }
            None => (
                jsonl::read(
                    file,
                    path,
                    ("", &mut *keys),
                    &position,
                    STEP_POINTS,
                    MAX_BATCH_BYTES,
                    &mut kept,
                )?,
                Bytes::new(),
            ),
        };
        // Takes the step's rich records: nothing holds a view of the records any more.
        tally.add(&mut step, problems)?;
        let moved = step.position != position;
        position = std::mem::replace(&mut step.position, position);
        let at_end = step.at_end;
        kept.keep_step(step, records);
        if at_end || !moved {
            break;
        }
    }
    let size = file.metadata()?.len();
    if position.offset < size {
        // Said as `read` says it: an event file's record by its offset, a JSONL line by its
        // number.
        let (at, what) = match relative {
            Some((relative, _)) => (format!("{relative}@{}", position.offset), "record"),
            None => (format!("{}:{}", path.display(), position.line), "line"),
        };
        writeln!(
            problems,
            "{at}: incomplete last {what} ({} bytes); not read",
            size - position.offset
        )?;
    }
    tally.files += 1;
    Ok(position.state)
}

/// The summary of one JSONL file or TensorBoard log directory (or event file).
fn summarize(
    path: &Path,
    shown: &str,
    jsonl_file: bool,
    problems: &mut impl Write,
) -> io::Result<Tally> {
    let (mut tally, mut keys) = (Tally::default(), KeyBudget::default());
    if jsonl_file {
        let mut file = open_regular(path)?
            .ok_or_else(|| io::Error::other(format!("{}: not a regular file", path.display())))?;
        read_file(&mut file, path, None, (&mut tally, &mut keys), problems)?;
        return Ok(tally);
    }
    let mut last_state: HashMap<String, String> = HashMap::new();
    for (file_path, relative) in super::tensorboard::event_files(path, shown, problems)? {
        let run = logdir::run_of(&relative).to_owned();
        let Some(mut file) = open_regular(&file_path).ok().flatten() else {
            writeln!(
                problems,
                "{relative}: cannot be opened as a regular file; not read"
            )?;
            continue;
        };
        let previous = last_state.get(&run).cloned().unwrap_or_default();
        let state = read_file(
            &mut file,
            &file_path,
            Some((&relative, &previous)),
            (&mut tally, &mut keys),
            problems,
        )?;
        last_state.insert(run, state);
    }
    Ok(tally)
}

/// Writes each path's summary (see the module); the status as `read`'s.
pub fn write(
    path: &Path,
    shown: &str,
    jsonl_file: bool,
    out: &mut impl Write,
    problems: &mut impl Write,
) -> io::Result<()> {
    let tally = summarize(path, shown, jsonl_file, problems)?;
    let mut total = Total {
        kind: "total",
        path: shown,
        files: tally.files,
        series: 0,
        points: 0,
        rich: 0,
        markers: 0,
        refused: tally.refused,
    };
    for entry in &tally.entries {
        match entry.kind {
            "scalars" => {
                total.series += 1;
                total.points += entry.records;
            }
            "session_start" | "out_of_order_step" => total.markers += entry.records,
            _ => total.rich += entry.records,
        }
        emit(out, entry)?;
    }
    emit(out, &total)
}
