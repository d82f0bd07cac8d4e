//! Reading declared sources into sealed spool batches: one bounded batch per file per
//! step, a TensorBoard run's files one after the other in name order (as TensorBoard reads
//! them, so batch order is its read order). Each step seals its batch and the position it
//! advances in one spool transaction.

pub mod jsonl;
pub mod tensorboard;

use std::collections::{HashMap, HashSet};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::draft::BatchDraft;
use crate::failpoints;
use crate::fence::{Fence, Refusal};
use crate::logdir;
use crate::spool::{SavedPosition, Spool};

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SourceKind {
    Jsonl,
    TensorBoard,
}

#[derive(Debug, Clone)]
pub struct SourceSpec {
    pub id: String,
    pub path: PathBuf,
    pub kind: SourceKind,
}

/// Where reading a file resumes.
#[derive(Debug, Clone, PartialEq)]
pub struct Position {
    pub offset: u64,
    /// The number of the next line (JSONL); unused for event files.
    pub line: u64,
    /// What the reader must remember about the file, as JSON.
    pub state: String,
}

/// What one read of one file gathered, and where the next read starts.
#[derive(Debug)]
pub struct ReadStep {
    pub draft: BatchDraft,
    pub position: Position,
    pub problems: Vec<String>,
    /// Refused records, by reason.
    pub rejected: Vec<(String, u64)>,
    /// Nothing more to read now (at most a record still being written).
    pub at_end: bool,
}

impl ReadStep {
    pub fn new(draft: BatchDraft, position: Position) -> Self {
        Self {
            draft,
            position,
            problems: Vec::new(),
            rejected: Vec::new(),
            at_end: false,
        }
    }

    pub fn reject(&mut self, reason: &str, count: u64) {
        match self.rejected.iter_mut().find(|(r, _)| r == reason) {
            Some((_, n)) => *n += count,
            None => self.rejected.push((reason.to_owned(), count)),
        }
    }
}

#[derive(Debug, Default)]
pub struct Counters {
    pub points: u64,
    pub rich: u64,
    pub refused: u64,
    pub problems: u64,
}

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
    spool: Spool,
    sources: Vec<SourceSpec>,
    bounds: Bounds,
    fence: Fence,
    listings: HashMap<String, Vec<(PathBuf, String)>>,
    said: HashSet<(String, String)>,
    pub counters: Counters,
}

pub fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

pub type StepResult = Result<bool, rusqlite::Error>;

impl SourceReader {
    pub fn new(spool: Spool, sources: Vec<SourceSpec>, bounds: Bounds, fence: Fence) -> Self {
        Self {
            spool,
            sources,
            bounds,
            fence,
            listings: HashMap::new(),
            said: HashSet::new(),
            counters: Counters::default(),
        }
    }

    pub fn spool_full(&self) -> rusqlite::Result<bool> {
        Ok(self.spool.stored_bytes()? >= self.bounds.spool_bytes)
    }

    /// Forget the listings: log directories are listed again on the next step.
    pub fn relist(&mut self) {
        self.listings.clear();
    }

    /// Whether every source is read to its end (nothing more to read now).
    pub fn run_once(&mut self) -> StepResult {
        let mut idle = true;
        for at in 0..self.sources.len() {
            let source = self.sources[at].clone();
            let mut behind: HashSet<String> = HashSet::new();
            let mut last: HashMap<String, String> = HashMap::new();
            for (path, relative) in self.files(&source) {
                let run = logdir::run_of(&relative).to_owned();
                if behind.contains(&run) {
                    continue;
                }
                if self.spool_full()? {
                    log::warn!(
                        "spool holds {} bytes (cap {}): reading paused, sources keep the \
                                data",
                        self.spool.stored_bytes()?,
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
            SourceKind::Jsonl => vec![(source.path.clone(), String::new())],
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

    fn report_once(&mut self, path: &Path, problem: &str, key: &str) {
        let key = if key.is_empty() { problem } else { key };
        if self
            .said
            .insert((key.to_owned(), path.display().to_string()))
        {
            self.report(problem);
        }
    }

    fn report(&mut self, problem: &str) {
        log::error!("{problem}");
        self.counters.problems += 1;
    }

    /// Reads one step of a file; `previous` is the TensorBoard run's file before it.
    fn step(
        &mut self,
        source: &SourceSpec,
        path: &Path,
        relative: &str,
        previous: &str,
    ) -> StepResult {
        let Ok(meta) = std::fs::metadata(path) else {
            return Ok(true);
        }; // not written yet
        let key = format!("{}:{}", meta.dev(), meta.ino());
        let saved = self.spool.position(&source.id, relative)?;
        let start = match saved {
            Some(saved) if saved.file_key == key => saved,
            _ => SavedPosition {
                file_key: key.clone(),
                offset: 0,
                line: 1,
                state: String::new(),
            },
        };
        if meta.len() < start.offset {
            self.report(&format!(
                "{}: file shrank below the read offset {}; waiting (a \
                                  truncated file is not re-read)",
                path.display(),
                start.offset
            ));
            return Ok(true);
        }
        if meta.len() == start.offset {
            return Ok(true);
        }
        let resume = Position {
            offset: start.offset,
            line: start.line,
            state: start.state,
        };
        let mut file = match self.fence.open(path) {
            Ok(file) => file,
            Err(Refusal::Gone) => return Ok(true),
            Err(Refusal::Refused(why)) => {
                self.report_once(path, &format!("source {}: refused: {why}", source.id), &key);
                return Ok(true);
            }
        };
        let read = match source.kind {
            SourceKind::Jsonl => jsonl::read(
                &mut file,
                path,
                &source.id,
                &resume,
                self.bounds.max_points,
                self.bounds.max_bytes,
            ),
            SourceKind::TensorBoard => {
                let before = if !previous.is_empty() && resume.state.is_empty() {
                    self.spool.position(&source.id, previous)?.map(|p| p.state)
                } else {
                    None
                };
                tensorboard::read(
                    &mut file,
                    relative,
                    &source.id,
                    &resume,
                    self.bounds.max_points,
                    self.bounds.max_bytes,
                    before.as_deref().unwrap_or(""),
                )
            }
        };
        let mut step = match read {
            Ok(step) => step,
            Err(e) => {
                self.report_once(
                    path,
                    &format!(
                        "source {}: {}: {}",
                        source.id,
                        path.display(),
                        crate::fence::plain(&e)
                    ),
                    &key,
                );
                return Ok(true);
            }
        };
        for problem in &step.problems {
            self.report(problem);
        }
        self.counters.refused += step.rejected.iter().map(|(_, n)| n).sum::<u64>();
        if step.position != resume {
            failpoints::reach("read");
            let (points, rich) = (step.draft.points as u64, step.draft.rich.len() as u64);
            let position = SavedPosition {
                file_key: key,
                offset: step.position.offset,
                line: step.position.line,
                state: step.position.state.clone(),
            };
            self.spool
                .seal(&mut step.draft, relative, &position, now(), &step.rejected)?;
            failpoints::reach("seal");
            self.counters.points += points;
            self.counters.rich += rich;
        }
        Ok(step.at_end)
    }
}
