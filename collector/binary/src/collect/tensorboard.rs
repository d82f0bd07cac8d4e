//! One read step of a TensorBoard event file: complete records from the saved offset up to
//! the batch bounds, each taken whole or not at all (the first that would pass a bound
//! stops the step, and the next starts at it).
//!
//! A file's saved state is what its tags declared (plugin metadata comes with a tag's
//! first value only) and its run's purge state, handed on to the run's next file. A file's
//! directory below the log directory is its run, which its scalars' series and its HParams
//! config entries carry as their `run_path`; a run path that is not a name is refused,
//! never escaped.

use std::fs::File;
use std::io;

use prost::bytes::Bytes;

use super::config::{entries, Declaring};
use super::reader::now;
use super::tbstate::{dump_state, load_state};
use super::{Bounds, Kept, Position, ReadStep};
use crate::collect::draft::BatchDraft;
use crate::collect::eventfile::{frame_at, READ_BYTES};
use crate::collect::logdir::run_of;
use crate::contract::proto::{config_entry::Origin, rich_record::Kind};
use crate::contract::proto::{ConfigEntry, RichRecord, SessionStart};
use crate::contract::MAX_BATCH_SERIES;
use crate::sources::config::{wall_time, KeyBudget, Setting};
use crate::sources::names::{escape_controls, name_problem, run_path_problem};
use crate::sources::repr::py_str;
use crate::sources::tensorboard::events::{decode, Decoded, Plugins, PurgeState, RichKind};
use crate::sources::tensorboard::framing::{FOOTER, HEADER};
use crate::sources::tensorboard::simple::simple;

/// What a point counts as before it is added: a point and its share of a chunk's names.
const POINT_MARGIN: usize = 64;

fn kind_of(kind: RichKind) -> Kind {
    match kind {
        RichKind::Image => Kind::Image,
        RichKind::Histogram => Kind::Histogram,
        RichKind::Audio => Kind::Audio,
        RichKind::Text => Kind::Text,
        RichKind::Tensor => Kind::Tensor,
    }
}

/// The batch of one step being filled, within its bounds.
struct Fill<'a> {
    step: &'a mut ReadStep,
    source: &'a str,
    file: String,
    plugins: Plugins,
    purge: PurgeState,
    run_refused: bool,
    max_points: usize,
    max_bytes: usize,
    skipped: u64,
    /// The config keys the source declared so far, and the clock as the step began.
    keys: &'a mut KeyBudget,
    read_at: f64,
}

impl Fill<'_> {
    /// A record over the batch bound, passed over unread: said and counted.
    fn oversized(&mut self, offset: u64, length: u64) {
        self.step.problems.push(format!(
            "{}@{offset}: record of {length} bytes is over the {} byte batch bound; skipped",
            self.file, self.max_bytes
        ));
        self.step.reject("over the batch bound", 1);
    }

    /// A record of one simple value, as nearly every scalar is written, added to the batch
    /// with no allocation: Some(whether it fit), or None for the full decoder (a tag that is
    /// not a name or declared a plugin, a refused run path, a step back that may purge).
    fn simple(&mut self, data: &[u8]) -> Option<bool> {
        let read = simple(data)?;
        let purge = &mut self.purge;
        let back = !purge.restarts() && read.step < purge.most_recent_step;
        if back
            || self.run_refused
            || name_problem(read.tag).is_some()
            || (!self.plugins.is_empty() && self.plugins.contains_key(read.tag))
        {
            return None;
        }
        let draft = &mut self.step.draft;
        let over = draft.points + 1 > self.max_points
            || draft.approx_bytes + POINT_MARGIN > self.max_bytes
            || (draft.series_count() + 1 > MAX_BATCH_SERIES
                && draft.crowded(std::iter::once(read.tag), 0, 0));
        if over && !draft.is_empty() {
            return Some(false);
        }
        purge.most_recent_step = read.step;
        draft.add_point(read.tag, read.step, read.wall_time, f64::from(read.value));
        Some(true)
    }

    /// Decodes a record (`whole[range]`) into the batch; false when it does not fit (the
    /// purge state is then as before it, and the next step decodes it again).
    fn record(&mut self, offset: u64, whole: &Bytes, range: std::ops::Range<usize>) -> bool {
        if let Some(fit) = self.simple(&whole[range.clone()]) {
            return fit;
        }
        // Only what the full decoder reads is a view of the records (the fast path copies
        // nothing, and takes no reference).
        let data = whole.slice(range);
        let before = (self.purge.file_version, self.purge.most_recent_step);
        let mut decoded = decode(data, &self.file, offset, &mut self.plugins, &mut self.purge);
        let dropped = if self.run_refused {
            std::mem::take(&mut decoded.scalars).len()
        } else {
            0
        };
        let mut problems = std::mem::take(&mut decoded.problems);
        let config = self.config(
            std::mem::take(&mut decoded.config),
            &decoded,
            offset,
            &mut problems,
        );
        let mut refused = 0u64;
        let mut rich = Vec::with_capacity(decoded.rich.len());
        for r in decoded.rich {
            let record = RichRecord {
                source: self.source.to_owned(),
                tag: r.tag,
                step: decoded.step,
                wall_time: decoded.wall_time,
                kind: kind_of(r.kind) as i32,
                payload: r.payload,
                plugin_name: r.plugin,
                plugin_content: r.plugin_content,
                file: self.file.clone(),
                offset,
            };
            if BatchDraft::rich_cost(&record) > self.max_bytes {
                problems.push(format!(
                    "{}@{offset}: {} record of {} bytes is over the {} byte batch bound; \
                     refused, not truncated",
                    self.file,
                    py_str(&record.tag),
                    prost::Message::encoded_len(&record),
                    self.max_bytes
                ));
                refused += 1;
            } else {
                rich.push(record);
            }
        }
        let markers: Vec<SessionStart> = decoded
            .markers
            .into_iter()
            .map(|m| SessionStart {
                source: self.source.to_owned(),
                file: self.file.clone(),
                offset,
                step: decoded.step,
                wall_time: decoded.wall_time,
                tags: m.tags,
            })
            .collect();
        let cost = decoded.scalars.len() * POINT_MARGIN
            + rich.iter().map(BatchDraft::rich_cost).sum::<usize>();
        let draft = &self.step.draft;
        let tags = decoded.scalars.iter().map(|(t, _)| t.as_str());
        let over = !markers.is_empty()
            || draft.points + decoded.scalars.len() > self.max_points
            || draft.approx_bytes + cost > self.max_bytes
            || ((!rich.is_empty()
                || draft.series_count() + decoded.scalars.len() > MAX_BATCH_SERIES)
                && draft.crowded(tags, rich.len(), markers.len()))
            || draft.config_crowded(config.len())
            || draft.approx_bytes + cost + BatchDraft::config_cost(&config) > self.max_bytes;
        if over && !draft.is_empty() {
            (self.purge.file_version, self.purge.most_recent_step) = before;
            return false;
        }
        self.step.problems.append(&mut problems);
        if refused > 0 {
            self.step.reject("over the batch bound", refused);
        }
        self.skipped += dropped as u64;
        let draft = &mut self.step.draft;
        for (tag, value) in &decoded.scalars {
            draft.add_point(tag, decoded.step, decoded.wall_time, *value);
        }
        rich.into_iter().for_each(|r| draft.add_rich(r));
        markers.into_iter().for_each(|m| draft.add_session_start(m));
        let left = draft.add_config_within(config, self.max_bytes).len();
        if left > 0 {
            self.step.problems.push(format!(
                "{}@{offset}: {left} config entries over the bounds of one batch with the \
                 record's other values; skipped",
                self.file
            ));
        }
        true
    }

    /// The record's `settings` as config entries of the file's run, within the source's key
    /// budget; each one skipped said in `problems`.
    fn config(
        &mut self,
        settings: Vec<Setting>,
        decoded: &Decoded,
        offset: u64,
        problems: &mut Vec<String>,
    ) -> Vec<ConfigEntry> {
        if settings.is_empty() {
            return Vec::new();
        }
        if self.run_refused {
            problems.push(format!(
                "{}@{offset}: run path not a name; {} config entries skipped",
                self.file,
                settings.len()
            ));
            return Vec::new();
        }
        let mut skipped = Vec::new();
        let settings = self.keys.within(self.source, settings, &mut skipped);
        let said = skipped
            .into_iter()
            .map(|why| format!("{}@{offset}: {why}; skipped", self.file));
        problems.extend(said);
        let by = Declaring {
            source: self.source,
            origin: Origin::Hparams,
            run_path: &self.step.draft.run_path,
            wall_time: wall_time(Some(decoded.wall_time), self.read_at),
        };
        entries(settings, by)
    }
}

/// Reads complete records of one event file from `start` up to the batch bounds;
/// `previous` is the saved state of the run's file read before it, if any; `keys` are the
/// config keys `source` declared so far. The records are
/// read into `kept`'s buffer, returned as the `Bytes` the step's records are views of: once
/// they are sealed, it can be had back for the next step.
pub fn read(
    file: &mut File,
    relative: &str,
    (source, keys): (&str, &mut KeyBudget),
    start: &Position,
    bounds: Bounds,
    previous: &str,
    kept: &mut Kept,
) -> io::Result<(ReadStep, Bytes)> {
    let (max_points, max_bytes) = (bounds.max_points, bounds.max_bytes);
    let run_path = run_of(relative);
    let run_refused = run_path_problem(run_path);
    let (plugins, purge) = load_state(&start.state, previous);
    let size = file.metadata()?.len();
    // A record of one scalar is 40 to 80 bytes framed: a read sized to the batch (not 8 MiB
    // each time, nor several batches' worth framed and checked, then read again next step).
    let first = READ_BYTES.min((max_points as u64 * 96).max(1 << 16));
    // A record over the batch bound can never be taken: it is not even read.
    let max_record = (max_bytes + HEADER + FOOTER) as u64;
    let records = std::mem::take(&mut kept.records);
    let (buffer, mut scan, covered) = frame_at(
        file,
        start.offset,
        first,
        max_record,
        kept.take_bytes(),
        records,
    )?;
    let run_path = if run_refused.is_some() { "" } else { run_path };
    let draft = BatchDraft::reusing(source, run_path, std::mem::take(&mut kept.columns));
    let mut step = ReadStep::new(draft, start.clone());
    let mut fill = Fill {
        step: &mut step,
        source,
        file: escape_controls(relative),
        plugins,
        purge,
        run_refused: run_refused.is_some(),
        max_points,
        max_bytes,
        skipped: 0,
        keys,
        read_at: now(),
    };
    let whole = Bytes::from(buffer);
    let mut stop = None;
    for record in &scan.records {
        if record.length > max_bytes {
            fill.oversized(record.offset, record.length as u64);
            continue;
        }
        let end = record.start.saturating_add(record.length).min(whole.len());
        if !fill.record(record.offset, &whole, record.start.min(end)..end) {
            stop = Some(record.offset);
            break;
        }
    }
    // A record over the bound after them, framed but not read: passed over once the file
    // holds it whole (until then the step waits for it, as for any record being written).
    let mut skipped_to = None;
    let after = start.offset + scan.consumed as u64;
    if stop.is_none() && scan.wanted as u64 > max_record && after + scan.wanted as u64 <= size {
        fill.oversized(after, (scan.wanted - HEADER - FOOTER) as u64);
        skipped_to = Some(after + scan.wanted as u64);
    }
    let (file_shown, skipped) = (fill.file.clone(), fill.skipped);
    let state = dump_state(&fill.plugins, &fill.purge);
    let until = stop.or(skipped_to).unwrap_or(after);
    for damage in scan.damage.iter().filter(|d| d.offset < until) {
        step.problems
            .push(format!("{file_shown}@{}: {}", damage.offset, damage.reason));
    }
    if skipped > 0 {
        step.problems.push(format!(
            "{file_shown}: run path {}; {skipped} scalar values skipped",
            run_refused.unwrap_or_default()
        ));
        step.reject("run path not a name", skipped);
    }
    step.position = Position {
        offset: until,
        line: 0,
        state,
    };
    // At the end: what is left is at most one record still being written, whatever its size
    // (a record larger than a read, its writer killed or slow, is waited for, not re-read in
    // a loop that never ends and keeps the run's later files unread).
    let waiting = scan.wanted > 0 && after + scan.wanted as u64 > size;
    kept.records = std::mem::take(&mut scan.records);
    step.at_end = stop.is_none()
        && skipped_to.is_none()
        && (start.offset + covered as u64 >= size || waiting);
    Ok((step, whole))
}
