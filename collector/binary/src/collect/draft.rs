//! What one read step gathers for a batch: scalar columns per tag in read order, rich
//! records, purge markers and config entries of one source, with an upper bound of their
//! encoded size kept as they are added (a batch is sealed before it would pass a bound of
//! the contract).

use std::collections::HashMap;

use prost::Message;

use crate::contract::proto::{ConfigEntry, RichRecord, SeriesChunk, SessionStart};
use crate::contract::{
    MAX_BATCH_CONFIG, MAX_BATCH_RICH, MAX_BATCH_SERIES, MAX_BATCH_SESSION_STARTS,
};

/// Upper bound of the encoded size of one point (three packed 8-byte numbers, varint slack).
pub const POINT_BYTES: usize = 30;
/// Framing of one chunk or record besides its names and payload.
pub const ENTRY_BYTES: usize = 32;

#[derive(Debug, Default)]
struct Series {
    steps: Vec<i64>,
    wall_times: Vec<f64>,
    values: Vec<f64>,
}

/// Whose clock a point's wall time is: the source's, or the collector's when it read a
/// line that gave none. A tag's points of each kind are chunks of their own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Wall {
    #[default]
    Written,
    Read,
}

/// The columns of a sealed batch, emptied, for the next draft to fill: a follower seals a
/// batch a second, and columns grown afresh each time are pages mapped, faulted in and
/// unmapped each time (musl maps each allocation over 128 KiB on its own).
#[derive(Debug, Default)]
pub struct Spare(Vec<Series>);

/// Series whose columns are kept at most; a batch of more tags grows the rest anew.
const SPARE_SERIES: usize = 64;

/// Points of one source (one TensorBoard run: `run_path`), plus rich records and markers.
#[derive(Debug, Default)]
pub struct BatchDraft {
    pub source: String,
    pub run_path: String,
    tags: Vec<(String, Wall)>,
    series: Vec<Series>,
    /// Each tag's place in `tags` (of its points with wall times written, and of those
    /// stamped when read), and the place of the tag last added to (a batch of one tag, or a
    /// tag's run of points, is not hashed point by point).
    index: HashMap<String, usize, foldhash::fast::RandomState>,
    stamped: HashMap<String, usize, foldhash::fast::RandomState>,
    last: usize,
    pub rich: Vec<RichRecord>,
    pub session_starts: Vec<SessionStart>,
    pub config: Vec<ConfigEntry>,
    pub points: usize,
    pub approx_bytes: usize,
    spare: Spare,
}

impl BatchDraft {
    pub fn new(source: &str, run_path: &str) -> Self {
        Self::reusing(source, run_path, Spare::default())
    }

    /// A draft whose series fill the `spare` columns first.
    pub fn reusing(source: &str, run_path: &str, spare: Spare) -> Self {
        Self {
            source: source.to_owned(),
            run_path: run_path.to_owned(),
            spare,
            ..Self::default()
        }
    }

    pub fn series_count(&self) -> usize {
        self.tags.len()
    }

    pub fn has_series(&self, tag: &str) -> bool {
        self.index.contains_key(tag)
    }

    fn has_series_as(&self, tag: &str, wall: Wall) -> bool {
        match wall {
            Wall::Written => self.index.contains_key(tag),
            Wall::Read => self.stamped.contains_key(tag),
        }
    }

    /// What a new chunk costs besides its tag and points: its source and run path.
    fn chunk_names_bytes(&self) -> usize {
        self.source.len() + self.run_path.len() + ENTRY_BYTES
    }

    /// Encoded bytes that adding one line's `metrics` (its wall time `wall`) would cost at
    /// most.
    pub fn cost(&self, metrics: &[(String, f64)], wall: Wall) -> usize {
        let mut cost = metrics.len() * POINT_BYTES;
        for (tag, _) in metrics {
            if !self.has_series_as(tag, wall) {
                cost += tag.len() + self.chunk_names_bytes();
            }
        }
        cost
    }

    fn series_of(&mut self, tag: &str, wall: Wall) -> &mut Series {
        if self
            .tags
            .get(self.last)
            .is_some_and(|(last, kind)| last == tag && *kind == wall)
        {
            return &mut self.series[self.last];
        }
        let index = match wall {
            Wall::Written => &self.index,
            Wall::Read => &self.stamped,
        };
        let at = match index.get(tag) {
            Some(&at) => at,
            None => {
                self.approx_bytes += tag.len() + self.chunk_names_bytes();
                self.tags.push((tag.to_owned(), wall));
                let series = self.spare.0.pop().unwrap_or_default();
                self.series.push(series);
                let at = self.tags.len() - 1;
                match wall {
                    Wall::Written => self.index.insert(tag.to_owned(), at),
                    Wall::Read => self.stamped.insert(tag.to_owned(), at),
                };
                at
            }
        };
        self.last = at;
        &mut self.series[at]
    }

    /// One point, its wall time the source's.
    pub fn add_point(&mut self, tag: &str, step: i64, wall_time: f64, value: f64) {
        self.add_point_as(tag, step, wall_time, Wall::Written, value);
    }

    fn add_point_as(&mut self, tag: &str, step: i64, wall_time: f64, wall: Wall, value: f64) {
        let series = self.series_of(tag, wall);
        series.steps.push(step);
        series.wall_times.push(wall_time);
        series.values.push(value);
        self.points += 1;
        self.approx_bytes += POINT_BYTES;
    }

    /// One line's metrics at one step, its wall time `wall`'s.
    pub fn add_line(&mut self, step: i64, wall_time: f64, wall: Wall, metrics: &[(String, f64)]) {
        for (tag, value) in metrics {
            self.add_point_as(tag, step, wall_time, wall, *value);
        }
    }

    pub fn rich_cost(record: &RichRecord) -> usize {
        record.encoded_len() + ENTRY_BYTES
    }

    pub fn add_rich(&mut self, record: RichRecord) {
        self.approx_bytes += Self::rich_cost(&record);
        self.rich.push(record);
    }

    pub fn add_session_start(&mut self, marker: SessionStart) {
        self.approx_bytes += marker.encoded_len() + ENTRY_BYTES;
        self.session_starts.push(marker);
    }

    /// Adding series of `tags`, `rich` records and `markers` would pass a count bound of
    /// the contract (series, rich records or markers per batch): seal the batch before.
    pub fn crowded<'a>(
        &self,
        tags: impl Iterator<Item = &'a str> + Clone,
        rich: usize,
        markers: usize,
    ) -> bool {
        if self.rich.len() + rich > MAX_BATCH_RICH
            || self.session_starts.len() + markers > MAX_BATCH_SESSION_STARTS
        {
            return true;
        }
        if self.tags.len() + tags.clone().count() <= MAX_BATCH_SERIES {
            return false;
        }
        let mut new: Vec<&str> = tags
            .filter(|t| !self.has_series(t) && !self.stamped.contains_key(*t))
            .collect();
        new.sort_unstable();
        new.dedup();
        self.tags.len() + new.len() > MAX_BATCH_SERIES
    }

    pub fn config_cost(entries: &[ConfigEntry]) -> usize {
        entries.iter().map(|e| e.encoded_len() + ENTRY_BYTES).sum()
    }

    /// Adding `count` config entries would pass the contract's bound: seal the batch before.
    pub fn config_crowded(&self, count: usize) -> bool {
        self.config.len() + count > MAX_BATCH_CONFIG
    }

    /// Adds the first of `entries` that keep the batch within `max_bytes` and the config
    /// bound; returns the rest.
    pub fn add_config_within(
        &mut self,
        entries: Vec<ConfigEntry>,
        max_bytes: usize,
    ) -> Vec<ConfigEntry> {
        let mut entries = entries.into_iter();
        for entry in entries.by_ref() {
            let cost = Self::config_cost(std::slice::from_ref(&entry));
            if self.config_crowded(1) || self.approx_bytes + cost > max_bytes {
                return std::iter::once(entry).chain(entries).collect();
            }
            self.approx_bytes += cost;
            self.config.push(entry);
        }
        Vec::new()
    }

    pub fn is_empty(&self) -> bool {
        self.points == 0
            && self.rich.is_empty()
            && self.session_starts.is_empty()
            && self.config.is_empty()
    }

    /// Keeps the columns of `chunks` (sealed: their points are encoded) for the next draft.
    pub fn keep(&mut self, chunks: Vec<SeriesChunk>) {
        let room = SPARE_SERIES.saturating_sub(self.spare.0.len());
        for chunk in chunks.into_iter().take(room) {
            let mut series = Series {
                steps: chunk.steps,
                wall_times: chunk.wall_times,
                values: chunk.values,
            };
            series.steps.clear();
            series.wall_times.clear();
            series.values.clear();
            self.spare.0.push(series);
        }
    }

    /// The kept columns, for the next draft.
    pub fn take_spare(&mut self) -> Spare {
        std::mem::take(&mut self.spare)
    }

    /// The chunks, one per tag in the order tags were first read.
    pub fn take_chunks(&mut self) -> Vec<SeriesChunk> {
        let series = std::mem::take(&mut self.series);
        self.index.clear();
        self.stamped.clear();
        std::mem::take(&mut self.tags)
            .into_iter()
            .zip(series)
            .map(|((tag, wall), s)| SeriesChunk {
                source: self.source.clone(),
                run_path: self.run_path.clone(),
                tag,
                steps: s.steps,
                wall_times: s.wall_times,
                values: s.values,
                wall_times_read: wall == Wall::Read,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metrics(names: &[&str]) -> Vec<(String, f64)> {
        names.iter().map(|n| ((*n).to_owned(), 1.0)).collect()
    }

    #[test]
    fn a_new_tag_costs_its_names_once() {
        let mut draft = BatchDraft::new("src", "");
        let line = metrics(&["loss", "lr"]);
        let first = draft.cost(&line, Wall::Written);
        assert_eq!(first, 2 * POINT_BYTES + 4 + 2 + 2 * (3 + ENTRY_BYTES));
        draft.add_line(1, 0.5, Wall::Written, &line);
        assert_eq!(draft.approx_bytes, first);
        assert_eq!(draft.cost(&line, Wall::Written), 2 * POINT_BYTES);
        assert_eq!(draft.cost(&line, Wall::Read), first); // stamped points: other chunks
        let chunks = draft.take_chunks();
        assert_eq!(chunks.len(), 2);
        assert_eq!(
            (chunks[0].tag.as_str(), &chunks[0].steps),
            ("loss", &vec![1])
        );
    }

    #[test]
    fn points_stamped_when_read_are_chunks_of_their_own_and_say_so() {
        let mut draft = BatchDraft::new("src", "");
        draft.add_line(1, 10.0, Wall::Written, &metrics(&["loss"]));
        draft.add_line(2, 99.0, Wall::Read, &metrics(&["loss"]));
        draft.add_line(3, 99.5, Wall::Read, &metrics(&["loss"]));
        let chunks = draft.take_chunks();
        let shown: Vec<_> = chunks
            .iter()
            .map(|c| (c.tag.as_str(), c.steps.clone(), c.wall_times_read))
            .collect();
        assert_eq!(
            shown,
            [("loss", vec![1], false), ("loss", vec![2, 3], true)]
        );
    }

    #[test]
    fn crowded_counts_only_new_series() {
        let mut draft = BatchDraft::new("s", "");
        for n in 0..MAX_BATCH_SERIES {
            draft.add_point(&format!("t{n}"), 0, 0.0, 0.0);
        }
        assert!(!draft.crowded(["t1", "t2"].into_iter(), 0, 0));
        assert!(draft.crowded(["new"].into_iter(), 0, 0));
        assert!(draft.crowded(std::iter::empty(), MAX_BATCH_RICH + 1, 0));
    }

    #[test]
    fn config_entries_fill_a_batch_up_to_its_bounds_and_no_further() {
        use crate::contract::proto::config_entry::Value;
        let entry = |n: usize| ConfigEntry {
            key: format!("k{n:04}"),
            value: Some(Value::Flag(true)),
            ..ConfigEntry::default()
        };
        let mut draft = BatchDraft::new("s", "");
        let entries = (0..MAX_BATCH_CONFIG + 5).map(entry).collect();
        let rest = draft.add_config_within(entries, usize::MAX);
        assert_eq!((draft.config.len(), rest.len()), (MAX_BATCH_CONFIG, 5));
        assert_eq!(rest[0].key, format!("k{MAX_BATCH_CONFIG:04}"));
        assert!(!draft.is_empty() && draft.config_crowded(1));
        let mut small = BatchDraft::new("s", "");
        let cost = BatchDraft::config_cost(&[entry(0)]);
        let rest = small.add_config_within(vec![entry(0), entry(1), entry(2)], 2 * cost + 1);
        assert_eq!(
            (small.config.len(), rest.len(), small.approx_bytes),
            (2, 1, 2 * cost)
        );
    }
}
