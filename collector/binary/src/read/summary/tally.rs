//! What `read --summary` counts of the steps it reads: each series (or tag's rich records or
//! markers) with its records and step and wall-time ranges, and the refused records by
//! reason, in first-read order.

use std::collections::{BTreeMap, HashMap};
use std::io::{self, Write};

use serde::Serialize;

use crate::collect::ReadStep;
use crate::contract::proto::rich_record::Kind;
use crate::read::JsonNumber;

/// One series (or one tag's rich records or markers) as the summary prints it.
#[derive(Serialize)]
pub struct Entry {
    pub kind: &'static str,
    pub run_path: String,
    pub tag: String,
    pub records: u64,
    pub first_step: i64,
    pub last_step: i64,
    pub min_step: i64,
    pub max_step: i64,
    /// Steps lower than the step before them in the same series.
    pub steps_back: u64,
    pub first_wall_time: JsonNumber,
    pub last_wall_time: JsonNumber,
    /// Payload bytes of rich records (0 for scalars and markers).
    pub bytes: u64,
}

impl Entry {
    fn new(kind: &'static str, run_path: &str, tag: &str, step: i64) -> Self {
        Self {
            kind,
            run_path: run_path.to_owned(),
            tag: tag.to_owned(),
            records: 0,
            first_step: step,
            last_step: step,
            min_step: step,
            max_step: step,
            steps_back: 0,
            first_wall_time: JsonNumber::of(0.0),
            last_wall_time: JsonNumber::of(0.0),
            bytes: 0,
        }
    }

    fn add(&mut self, step: i64, wall_time: f64, bytes: u64) {
        if self.records == 0 {
            self.first_wall_time = JsonNumber::of(wall_time);
        } else if step < self.last_step {
            self.steps_back += 1;
        }
        self.records += 1;
        self.last_step = step;
        self.min_step = self.min_step.min(step);
        self.max_step = self.max_step.max(step);
        self.last_wall_time = JsonNumber::of(wall_time);
        self.bytes += bytes;
    }
}

#[derive(Serialize)]
pub struct Total<'a> {
    pub kind: &'static str,
    pub path: &'a str,
    pub files: u64,
    pub series: u64,
    pub points: u64,
    pub rich: u64,
    pub markers: u64,
    pub refused: BTreeMap<String, u64>,
}

/// Everything read from one path, in first-read order.
#[derive(Default)]
pub struct Tally {
    pub entries: Vec<Entry>,
    index: HashMap<(&'static str, String, String), usize>,
    pub refused: BTreeMap<String, u64>,
    pub files: u64,
}

impl Tally {
    fn entry(&mut self, kind: &'static str, run_path: &str, tag: &str, step: i64) -> &mut Entry {
        let key = (kind, run_path.to_owned(), tag.to_owned());
        let at = *self.index.entry(key).or_insert_with(|| {
            self.entries.push(Entry::new(kind, run_path, tag, step));
            self.entries.len() - 1
        });
        &mut self.entries[at]
    }

    /// Counts what a step read, and says its problems.
    pub fn add(&mut self, step: &mut ReadStep, problems: &mut impl Write) -> io::Result<()> {
        for problem in &step.problems {
            writeln!(problems, "{problem}")?;
        }
        for (reason, count) in &step.rejected {
            *self.refused.entry(reason.clone()).or_default() += count;
        }
        let draft = &mut step.draft;
        let run_path = draft.run_path.clone();
        let chunks = draft.take_chunks();
        for chunk in &chunks {
            let first = chunk.steps.first().copied().unwrap_or(0);
            let entry = self.entry("scalars", &run_path, &chunk.tag, first);
            for (&s, &w) in chunk.steps.iter().zip(&chunk.wall_times) {
                entry.add(s, w, 0);
            }
        }
        draft.keep(chunks);
        for rich in std::mem::take(&mut draft.rich) {
            let kind = Kind::try_from(rich.kind).map_or("rich", kind_name);
            let entry = self.entry(kind, &run_path, &rich.tag, rich.step);
            entry.add(rich.step, rich.wall_time, rich.payload.len() as u64);
        }
        for marker in std::mem::take(&mut draft.session_starts) {
            let kind = if marker.tags.is_empty() {
                "session_start"
            } else {
                "out_of_order_step"
            };
            let entry = self.entry(kind, &run_path, "", marker.step);
            entry.add(marker.step, marker.wall_time, 0);
        }
        Ok(())
    }
}

fn kind_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Image => "image",
        Kind::Histogram => "histogram",
        Kind::Audio => "audio",
        Kind::Text => "text",
        Kind::Tensor => "tensor",
        Kind::Json => "json",
        Kind::Unspecified => "rich",
    }
}
