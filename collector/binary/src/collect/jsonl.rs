//! One read step of a JSONL metric file: complete lines from the saved position until a
//! batch bound or the end of the file, each line's metrics and config entries taken whole
//! or not at all. A damaged line is a problem with its file and line and is passed over; a
//! setting that cannot be sent is skipped, said the same way; a line still being written
//! (no newline yet) waits for the next step.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

use super::config::{entries, Declaring};
use super::reader::now;
use super::{Kept, Position, ReadStep};
use crate::collect::draft::{BatchDraft, Wall};
use crate::contract::proto::config_entry::Origin;
use crate::sources::config::{wall_time, KeyBudget};
use crate::sources::jsonl::{is_blank, parse_line, Line};

/// One read's worth of a JSONL file; a longer line is skipped, said.
pub const READ_BYTES: usize = 4 * 1024 * 1024;

fn read_more(file: &mut File, into: &mut Vec<u8>, limit: usize) -> io::Result<usize> {
    let before = into.len();
    file.take(limit as u64).read_to_end(into)?;
    Ok(into.len() - before)
}

/// A line longer than READ_BYTES starts at `offset`: skip it, said with file and line,
/// once its end is written. Returns the new (offset, line, waiting for its end).
pub fn skip_overlong(
    file: &mut File,
    path: &Path,
    offset: u64,
    line: u64,
    problems: &mut Vec<String>,
) -> io::Result<(u64, u64, bool)> {
    let mut at = offset + READ_BYTES as u64;
    file.seek(SeekFrom::Start(at))?;
    let mut chunk = vec![0u8; 1 << 20];
    loop {
        let got = file.read(&mut chunk)?;
        if got == 0 {
            return Ok((offset, line, true));
        }
        if let Some(found) = chunk[..got].iter().position(|&b| b == b'\n') {
            let end = at + found as u64;
            problems.push(format!(
                "{}:{line}: line of {} bytes, over the {READ_BYTES} byte bound; skipped",
                path.display(),
                end - offset
            ));
            return Ok((end + 1, line + 1, false));
        }
        at += got as u64;
    }
}

/// What one line adds to the batch: whether it fit (a line that does not wait for the next
/// batch, unless it is over the bounds of one on its own).
struct Lines<'a> {
    path: &'a Path,
    source: &'a str,
    max_points: usize,
    max_bytes: usize,
    read_at: f64,
    keys: &'a mut KeyBudget,
}

impl Lines<'_> {
    /// Adds the line numbered `line` to the step's batch; false when it waits for the next.
    fn add(&mut self, step: &mut ReadStep, parsed: Line, line: u64) -> bool {
        let (wall_time_given, wall) = match parsed.wall_time {
            Some(given) => (given, Wall::Written),
            None => (self.read_at, Wall::Read),
        };
        let mut skipped = parsed.skipped;
        let settings = self.keys.within(self.source, parsed.config, &mut skipped);
        let by = Declaring {
            source: self.source,
            origin: Origin::Jsonl,
            run_path: "",
            wall_time: wall_time(parsed.wall_time, self.read_at),
        };
        let config = entries(settings, by);
        let draft = &step.draft;
        let cost = draft.cost(&parsed.metrics, wall);
        let tags = parsed.metrics.iter().map(|(t, _)| t.as_str());
        let metrics_over = draft.points + parsed.metrics.len() > self.max_points
            || draft.approx_bytes + cost > self.max_bytes
            || draft.crowded(tags, 0, 0);
        let config_over = draft.config_crowded(config.len())
            || draft.approx_bytes + cost + BatchDraft::config_cost(&config) > self.max_bytes;
        if (metrics_over || config_over) && !draft.is_empty() {
            return false;
        }
        let shown = self.path.display();
        if metrics_over {
            step.problems.push(format!(
                "{shown}:{line}: {} metrics ({cost} bytes) on one line, over the bounds of \
                 one batch",
                parsed.metrics.len()
            ));
            return true;
        }
        step.draft
            .add_line(parsed.step, wall_time_given, wall, &parsed.metrics);
        let left = step.draft.add_config_within(config, self.max_bytes).len();
        if left > 0 {
            skipped.push(format!(
                "{left} config entries over the bounds of one batch with the line's metrics"
            ));
        }
        let said = skipped
            .into_iter()
            .map(|why| format!("{shown}:{line}: {why}; skipped"));
        step.problems.extend(said);
        true
    }
}

/// Reads complete lines of `file` (shown as `path`) from `start` up to the batch bounds,
/// with `kept`'s buffer and columns; `keys` are the config keys `source` declared so far.
pub fn read(
    file: &mut File,
    path: &Path,
    (source, keys): (&str, &mut KeyBudget),
    start: &Position,
    max_points: usize,
    max_bytes: usize,
    kept: &mut Kept,
) -> io::Result<ReadStep> {
    let draft = BatchDraft::reusing(source, "", std::mem::take(&mut kept.columns));
    let mut step = ReadStep::new(draft, start.clone());
    // A line that gives no wall time is stamped with the collector's clock as it reads it.
    let mut lines = Lines {
        path,
        source,
        max_points,
        max_bytes,
        read_at: now(),
        keys,
    };
    let (mut offset, mut line, mut begin) = (start.offset, start.line, 0usize);
    file.seek(SeekFrom::Start(start.offset))?;
    // A batch's lines are most often far fewer bytes than a whole read: read that much
    // first, the rest of a read's worth only if the batch is not full by then.
    let mut data = kept.take_bytes();
    read_more(
        file,
        &mut data,
        READ_BYTES.min((max_points * 64).max(1 << 16)),
    )?;
    loop {
        let Some(found) = data[begin..].iter().position(|&b| b == b'\n') else {
            let room = READ_BYTES - data.len();
            if room > 0 && read_more(file, &mut data, room)? > 0 {
                continue;
            }
            step.at_end = data.len() < READ_BYTES;
            if begin == 0 && !step.at_end {
                // One line longer than a whole read.
                (offset, line, step.at_end) =
                    skip_overlong(file, path, offset, line, &mut step.problems)?;
            }
            break;
        };
        let end = begin + found;
        let raw = &data[begin..end];
        if !is_blank(raw) {
            match parse_line(raw) {
                Ok(parsed) => {
                    if !lines.add(&mut step, parsed, line) {
                        break;
                    }
                }
                Err(problem) => step
                    .problems
                    .push(format!("{}:{line}: {problem}", path.display())),
            }
        }
        offset += (end + 1 - begin) as u64;
        line += 1;
        begin = end + 1;
    }
    step.position = Position {
        offset,
        line,
        state: String::new(),
    };
    kept.keep_bytes(data);
    Ok(step)
}
