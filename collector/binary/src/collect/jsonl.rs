//! One read step of a JSONL metric file: complete lines from the saved position until a
//! batch bound or the end of the file. A damaged line is a problem with its file and line
//! and is passed over; a line still being written (no newline yet) waits for the next step.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

use super::reader::now;
use super::{Kept, Position, ReadStep};
use crate::collect::draft::{BatchDraft, Wall};
use crate::sources::jsonl::{is_blank, parse_line};

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

/// Reads complete lines of `file` (shown as `path`) from `start` up to the batch bounds,
/// with `kept`'s buffer and columns.
pub fn read(
    file: &mut File,
    path: &Path,
    source: &str,
    start: &Position,
    max_points: usize,
    max_bytes: usize,
    kept: &mut Kept,
) -> io::Result<ReadStep> {
    let draft = BatchDraft::reusing(source, "", std::mem::take(&mut kept.columns));
    let mut step = ReadStep::new(draft, start.clone());
    // A line that gives no wall time is stamped with the collector's clock as it reads it.
    let read_at = now();
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
                    let (wall_time, wall) = match parsed.wall_time {
                        Some(given) => (given, Wall::Written),
                        None => (read_at, Wall::Read),
                    };
                    let draft = &step.draft;
                    let cost = draft.cost(&parsed.metrics, wall);
                    let tags = parsed.metrics.iter().map(|(t, _)| t.as_str());
                    if draft.points + parsed.metrics.len() > max_points
                        || draft.approx_bytes + cost > max_bytes
                        || draft.crowded(tags, 0, 0)
                    {
                        if draft.points != 0 {
                            break;
                        }
                        step.problems.push(format!(
                            "{}:{line}: {} metrics ({cost} bytes) on one line, over the \
                             bounds of one batch",
                            path.display(),
                            parsed.metrics.len()
                        ));
                    } else {
                        step.draft
                            .add_line(parsed.step, wall_time, wall, &parsed.metrics);
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
