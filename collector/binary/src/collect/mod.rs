//! What reading declared sources is made of: the sources (JSONL files, TensorBoard log
//! directories, rich channels), where a file's reading resumes, and what one read step of
//! one file gathers; the reader (`reader`) seals each step's batch with the position it
//! advances, in one spool transaction.

pub mod channel;
mod choose;
pub mod config;
pub mod draft;
pub mod eventfile;
pub mod fence;
pub mod generation;
pub mod jsonl;
pub mod logdir;
pub mod opener;
mod reader;
mod resume;
mod step;
mod tbstate;
pub mod tensorboard;
mod unfinished;

pub use channel::Channel;
pub use reader::{now, Bounds, Counters, SourceReader, BATCH_POINTS};

use std::path::PathBuf;

pub use crate::buffers::Kept;
use crate::collect::draft::BatchDraft;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SourceKind {
    Jsonl,
    TensorBoard,
    /// A rich JSONL channel (its `channel` says what its records are held to).
    Channel,
}

#[derive(Debug, Clone)]
pub struct SourceSpec {
    pub id: String,
    pub path: PathBuf,
    pub kind: SourceKind,
    pub channel: Option<Channel>,
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
