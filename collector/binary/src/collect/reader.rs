//! The reader of a collector's sources: each step lists the sources (a TensorBoard log
//! directory's event files), reads one bounded batch of every file that grew, and seals it
//! with the position it advances; a run's files one after the other, in name order.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use super::{channel, Kept, SourceKind, SourceSpec};
use crate::collect::fence::Fence;
use crate::collect::generation::{count_held, held_full, Held, HELD_FILES};
use crate::collect::logdir;
use crate::collect::unfinished::Unfinished;
use crate::sources::config::KeyBudget;
use crate::sources::names::escape_controls;
use crate::spool::{room, Shared};

#[derive(Debug, Default)]
pub struct Counters {
    /// Batches sealed, and their bytes at most.
    pub batches: u64,
    pub sealed_bytes: u64,
    pub points: u64,
    pub rich: u64,
    pub refused: u64,
    pub problems: u64,
}

/// Points of one batch unless told otherwise: twice what a busy job (10,000 points a
/// second) writes in a round, so that each round of following it seals one batch, not a
/// full one and then the few points past it (every batch costs a transaction synced to
/// disk, a call to ingest and its deletion).
pub const BATCH_POINTS: usize = 20_000;

/// What bounds reading: points and bytes of one batch, and the spool size at which
/// reading pauses (the sources keep the data).
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    pub max_points: usize,
    pub max_bytes: usize,
    pub spool_bytes: u64,
}

/// Steppable: each `run_once` seals at most one batch per file of every source.
pub struct SourceReader {
    pub(super) spool: Shared,
    pub(super) sources: Vec<SourceSpec>,
    pub(super) bounds: Bounds,
    pub(super) fence: Fence,
    pub(super) listings: HashMap<String, Vec<(PathBuf, String)>>,
    pub(super) budgets: HashMap<String, channel::Budget>,
    /// The last step's buffers, kept for the next.
    pub(super) kept: Kept,
    pub(super) said: HashSet<(String, String)>,
    /// The config keys each source declared so far (by source id).
    pub(super) config_keys: HashMap<String, KeyBudget>,
    /// Each file read so far, by (source, file), held open (`generation::Held`), and the
    /// steps taken (which says which was read last).
    pub(super) held: HashMap<(String, String), Held>,
    pub(super) steps: u64,
    /// Earlier files that end in an unfinished line or record, waited for.
    pub(super) unfinished: Unfinished,
    /// The spool's size when last asked, and `counters.sealed_bytes` then.
    stored: Option<(u64, u64)>,
    /// Reading paused for room on the spool's filesystem (`spool::room`), said once.
    short_of_room: bool,
    pub counters: Counters,
}

pub fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

pub type StepResult = Result<bool, rusqlite::Error>;

impl SourceReader {
    pub fn new(spool: Shared, sources: Vec<SourceSpec>, bounds: Bounds, fence: Fence) -> Self {
        Self {
            spool,
            sources,
            bounds,
            fence,
            listings: HashMap::new(),
            budgets: HashMap::new(),
            kept: Kept::default(),
            said: HashSet::new(),
            config_keys: HashMap::new(),
            held: HashMap::new(),
            steps: 0,
            unfinished: Unfinished::default(),
            stored: None,
            short_of_room: false,
            counters: Counters::default(),
        }
    }

    /// Whether reading waits for the sender: the spool at its cap, or its filesystem short
    /// of room as the last round found it (`run_once` looks, once a round).
    pub fn spool_full(&mut self) -> rusqlite::Result<bool> {
        Ok(self.short_of_room || self.held_bytes()? >= self.bounds.spool_bytes)
    }

    /// Whether the spool's filesystem has the room it keeps free (`spool::room`), looked at
    /// now, after giving back what the sender freed when it looks short (a WAL grown by the
    /// last seals and deletions is no reason to pause); a pause and its end are said once
    /// each.
    pub fn room_left(&mut self) -> bool {
        let directory = self.spool.get().directory.clone();
        let enough = room::enough(&directory, self.short_of_room) || {
            self.spool.get().give_back_room();
            room::enough(&directory, self.short_of_room)
        };
        if enough == self.short_of_room {
            self.short_of_room = !enough;
            if enough {
                log::info!("the spool's filesystem has room again: reading goes on");
            } else {
                log::warn!(
                    "the spool's filesystem ({}) has less than {} MiB free: reading pauses, \
                     the sources keep the data, and the sender goes on (its deletions need \
                     that room)",
                    directory.display(),
                    room::KEPT_FREE >> 20
                );
            }
        }
        enough
    }

    /// What the spool holds at most: its size when last asked plus what was sealed since
    /// (the sender only deletes). The spool is asked again only when that bound reaches the
    /// cap, so a follower's rounds do not sum the spool's payloads every time.
    fn held_bytes(&mut self) -> rusqlite::Result<u64> {
        let sealed = self.counters.sealed_bytes;
        if let Some((stored, then)) = self.stored {
            let bound = stored + (sealed - then);
            if bound < self.bounds.spool_bytes {
                return Ok(bound);
            }
        }
        let stored = self.spool.get().stored_bytes()?;
        self.stored = Some((stored, sealed));
        Ok(stored)
    }

    /// What to watch to know when a source changes: each file's directory, and each log
    /// directory with the directories its event files are in (as last listed).
    pub fn watches(&self) -> Vec<crate::follow::Watch> {
        self.sources
            .iter()
            .flat_map(|source| {
                let files: Vec<PathBuf> = self
                    .listings
                    .get(&source.id)
                    .map(|l| l.iter().map(|(path, _)| path.clone()).collect())
                    .unwrap_or_default();
                let log_directory = source.kind == SourceKind::TensorBoard;
                crate::follow::watches_of(&source.path, log_directory, &files)
            })
            .collect()
    }

    /// The attempt ended: what is left is read as far as it can be, nothing waited for.
    pub fn drain(&mut self) {
        self.unfinished.drain();
    }

    /// Forget the listings: log directories are listed again on the next step.
    pub fn relist(&mut self) {
        self.listings.clear();
    }

    /// Whether every source is read to its end (nothing more to read now).
    pub fn run_once(&mut self) -> StepResult {
        self.settle_checkpoints()?;
        if !self.room_left() {
            return Ok(false);
        }
        let mut idle = true;
        for at in 0..self.sources.len() {
            let source = self.sources[at].clone();
            let mut behind: HashSet<String> = HashSet::new();
            let mut last: HashMap<String, String> = HashMap::new();
            let files = self.files(&source);
            // A file held open that its log directory no longer lists (deleted, or renamed
            // out of it) is finished through its descriptor, and its end recorded.
            let listed: HashSet<&str> = files.iter().map(|(_, r)| r.as_str()).collect();
            let vanished: Vec<String> = self
                .held
                .keys()
                .filter(|(id, relative)| *id == source.id && !listed.contains(relative.as_str()))
                .map(|(_, relative)| relative.clone())
                .collect();
            for relative in vanished {
                if self.held_bytes()? >= self.bounds.spool_bytes {
                    return Ok(false); // the cap holds for a file finished too
                }
                let path = source.path.join(&relative);
                idle &= self.step(&source, &path, &relative, "")?;
            }
            for (path, relative) in files {
                let run = logdir::run_of(&relative).to_owned();
                if behind.contains(&run) {
                    continue;
                }
                // An upper bound: a log directory of many files is not a query per file.
                let held = self.held_bytes()?;
                if held >= self.bounds.spool_bytes {
                    log::warn!(
                        "spool holds {held} bytes (cap {}): reading paused, sources keep the \
                         data",
                        self.bounds.spool_bytes
                    );
                    return Ok(false);
                }
                let previous = last.get(&run).cloned().unwrap_or_default();
                let at_end = self.step(&source, &path, &relative, &previous)?;
                last.insert(run.clone(), relative);
                if !at_end && source.kind == SourceKind::TensorBoard {
                    behind.insert(run);
                }
                idle &= at_end;
            }
        }
        Ok(idle)
    }

    fn files(&mut self, source: &SourceSpec) -> Vec<(PathBuf, String)> {
        if let Some(files) = self.listings.get(&source.id) {
            return files.clone();
        }
        let files = match source.kind {
            SourceKind::Jsonl | SourceKind::Channel => vec![(source.path.clone(), String::new())],
            SourceKind::TensorBoard => {
                let listing = logdir::event_files(&source.path);
                for problem in &listing.problems {
                    self.report_once(&source.path, problem, "");
                }
                listing
                    .files
                    .into_iter()
                    .map(|p| {
                        let relative = if p == source.path {
                            p.file_name()
                                .map(|n| n.to_string_lossy().into_owned())
                                .unwrap_or_default()
                        } else {
                            p.strip_prefix(&source.path)
                                .map(|r| r.to_string_lossy().into_owned())
                                .unwrap_or_default()
                        };
                        (p, relative)
                    })
                    .collect()
            }
        };
        self.listings.insert(source.id.clone(), files.clone());
        files
    }

    pub(super) fn report_once(&mut self, path: &Path, problem: &str, key: &str) {
        let key = if key.is_empty() { problem } else { key };
        if self
            .said
            .insert((key.to_owned(), path.display().to_string()))
        {
            self.report(problem);
        }
    }

    /// Keeps `file` open for the next steps; when this reader holds `HELD_FILES`, or the
    /// process as many as it may, the least recently read one is let go first (none is
    /// held when no room can be made).
    pub(super) fn hold(&mut self, name: (String, String), key: String, file: std::fs::File) {
        if !self.make_room() {
            return;
        }
        self.steps += 1;
        let used = self.steps;
        count_held(true);
        if let Some(before) = self.held.insert(name, Held { key, file, used }) {
            drop(before);
            count_held(false);
        }
    }

    /// The held file of `name`, no longer held.
    pub(super) fn let_go(&mut self, name: &(String, String)) -> Option<Held> {
        let found = self.held.remove(name);
        if found.is_some() {
            count_held(false);
        }
        found
    }

    /// Room for one more held file: the least recently read let go while this reader is at
    /// its bound or the process at its budget. False when none is left to let go.
    pub(super) fn make_room(&mut self) -> bool {
        while self.held.len() >= HELD_FILES || held_full() {
            let Some(oldest) = self
                .held
                .iter()
                .min_by_key(|(_, held)| held.used)
                .map(|(name, _)| name.clone())
            else {
                return false;
            };
            self.let_go(&oldest);
        }
        true
    }

    /// Logs a problem, its control characters escaped: a file's name or a record's text
    /// is the training job's, and must not forge a line of the log.
    pub(super) fn report(&mut self, problem: &str) {
        log::error!("{}", escape_controls(problem));
        self.counters.problems += 1;
    }
}
