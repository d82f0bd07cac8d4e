//! One read step of a rich JSONL channel: each line's record checked against the channel's
//! JSON Schema and byte budgets.
//!
//! ```text
//! {"step": 120, "wall_time": 1732867200.5, "record": {...}}
//! ```
//!
//! A record over `max_record_bytes`, off its schema, or beyond the channel's bytes per
//! minute is rejected with its reason and counted: never truncated, never silently
//! dropped. Malformed lines are reported with file and line.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;

use super::jsonl::{skip_overlong, READ_BYTES};
use super::{Position, ReadStep};
use crate::collect::draft::BatchDraft;
use crate::contract::proto::{rich_record::Kind, RichRecord};
use crate::sources::jsonl::is_blank;
use crate::sources::names::bounded;

/// What a channel's records are held to.
#[derive(Clone)]
pub struct Channel {
    pub validator: Arc<jsonschema::Validator>,
    pub max_record_bytes: u64,
    pub max_bytes_per_minute: u64,
}

impl std::fmt::Debug for Channel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Channel(max_record_bytes={}, max_bytes_per_minute={})",
            self.max_record_bytes, self.max_bytes_per_minute
        )
    }
}

/// A token bucket of bytes: `per_minute` capacity, refilled continuously.
pub struct Budget {
    capacity: f64,
    tokens: f64,
    at: Instant,
}

impl Budget {
    pub fn new(per_minute: u64) -> Self {
        Self::at(per_minute, Instant::now())
    }

    /// A full budget as of `now`.
    fn at(per_minute: u64, now: Instant) -> Self {
        Self {
            capacity: per_minute as f64,
            tokens: per_minute as f64,
            at: now,
        }
    }

    /// Takes `size` bytes as of `now`, if the budget holds them (the clock is the caller's,
    /// so the refill can be tested without waiting).
    fn take(&mut self, size: usize, now: Instant) -> bool {
        let refill = now.duration_since(self.at).as_secs_f64() * self.capacity / 60.0;
        (self.tokens, self.at) = ((self.tokens + refill).min(self.capacity), now);
        if size as f64 > self.tokens {
            return false;
        }
        self.tokens -= size as f64;
        true
    }
}

/// The record of one line, or None (said in `step`).
fn record_of(
    raw: &[u8],
    where_: &str,
    id: &str,
    channel: &Channel,
    step: &mut ReadStep,
) -> Option<RichRecord> {
    if raw.len() as u64 > channel.max_record_bytes {
        step.reject("over max_record_bytes", 1);
        step.problems.push(format!(
            "{where_}: rejected: record of {} bytes is over the \
                                    channel's max_record_bytes {}",
            raw.len(),
            channel.max_record_bytes
        ));
        return None;
    }
    let line: Value = match serde_json::from_slice(raw) {
        Ok(line) => line,
        Err(e) => {
            step.problems.push(format!("{where_}: not JSON: {e}"));
            return None;
        }
    };
    let at = line
        .get("step")
        .filter(|s| !s.is_boolean())
        .and_then(Value::as_i64);
    let wall = line
        .get("wall_time")
        .and_then(Value::as_f64)
        .filter(|w| w.is_finite());
    let (Some(at), Some(wall), Some(record)) = (at, wall, line.get("record")) else {
        step.problems.push(format!(
            "{where_}: a channel line needs integer 'step', number \
                                    'wall_time' and 'record'"
        ));
        return None;
    };
    if let Some(error) = channel.validator.iter_errors(record).next() {
        step.reject("off schema", 1);
        let place = error.instance_path().as_str().to_owned();
        step.problems.push(bounded(format!(
            "{where_}: rejected: off the channel's schema: record{} {error}",
            place.replace('/', ".")
        )));
        return None;
    }
    Some(RichRecord {
        source: id.to_owned(),
        tag: id.to_owned(),
        step: at,
        wall_time: wall,
        kind: Kind::Json as i32,
        payload: serde_json::to_vec(record).ok()?.into(),
        ..RichRecord::default()
    })
}

/// Reads the channel's complete lines from `start` up to the batch's byte bound.
pub fn read(
    file: &mut File,
    path: &Path,
    id: &str,
    channel: &Channel,
    budget: &mut Budget,
    start: &Position,
    max_bytes: usize,
) -> io::Result<ReadStep> {
    let mut step = ReadStep::new(BatchDraft::new(id, ""), start.clone());
    file.seek(SeekFrom::Start(start.offset))?;
    let mut data = Vec::new();
    file.take(READ_BYTES as u64).read_to_end(&mut data)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let (mut offset, mut line, mut begin) = (start.offset, start.line, 0usize);
    let mut full = false;
    while let Some(found) = data[begin..].iter().position(|&b| b == b'\n') {
        let end = begin + found;
        let raw = &data[begin..end];
        if !is_blank(raw) {
            let where_ = format!("{}:{line}", path.display());
            if let Some(mut record) = record_of(raw, &where_, id, channel, &mut step) {
                (record.offset, record.file) = (offset, name.clone());
                let draft = &step.draft;
                if !draft.is_empty()
                    && (draft.approx_bytes + BatchDraft::rich_cost(&record) > max_bytes
                        || draft.crowded(std::iter::empty(), 1, 0))
                {
                    full = true;
                    break; // the next batch starts with this record
                }
                if budget.take(raw.len(), Instant::now()) {
                    step.draft.add_rich(record);
                } else {
                    step.reject("over max_bytes_per_minute", 1);
                    step.problems.push(format!(
                        "{where_}: rejected: over the channel's budget \
                                                of {} bytes per minute",
                        channel.max_bytes_per_minute
                    ));
                }
            }
        }
        offset += (end + 1 - begin) as u64;
        line += 1;
        begin = end + 1;
    }
    if !full {
        step.at_end = data.len() < READ_BYTES;
        if begin == 0 && !step.at_end {
            (offset, line, step.at_end) =
                skip_overlong(file, path, offset, line, &mut step.problems)?;
        }
    }
    step.position = Position {
        offset,
        line,
        state: String::new(),
    };
    Ok(step)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_per_minute_budget_refills_with_time_up_to_its_capacity() {
        let start = Instant::now();
        let after = |seconds: f64| start + Duration::from_secs_f64(seconds);
        let mut budget = Budget::at(600, start);
        assert!(budget.take(600, start));
        assert!(!budget.take(10, after(0.5))); // 5 bytes refilled
        assert!(budget.take(10, after(1.0))); // 10 refilled
        assert!(budget.take(590, after(120.0))); // full again, never above capacity
        assert!(!budget.take(20, after(120.0)));
    }
}
