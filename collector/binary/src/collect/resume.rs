//! A new spool's checkpoints, settled by the reader (`spool::resume` says why and when):
//! each file is looked at where its source says it is, opened as its source is read. The
//! file resumes after its checkpoint when it still holds the bytes the checkpoint
//! fingerprinted and is at least as long; else (gone, or another file at its path) what it
//! held past the checkpoint is in no source this collector reaches: a gap, said with its
//! bounds. A checkpoint of a source this collector does not read is left alone, said once.

use std::fs::File;

use super::generation::{self, key_of};
use super::reader::{now, SourceReader};
use crate::collect::fence::Refusal;
use crate::contract::proto::SourcePosition;
use crate::contract::MAX_POSITION_FILE_BYTES;
use crate::sources::names::{escape_controls, relative_path_problem};
use crate::spool::{Adopted, Resume, SavedPosition, Settled};

/// Whether `file` (of length `length`) holds the bytes `checkpoint` was read to: at least
/// as long, and its first bytes the ones fingerprinted. A checkpoint past a file's start
/// without a fingerprint (a collector that could not read the file's first bytes, or one
/// from before fingerprints) says nothing of which file it was: it matches none, so the
/// file there is read from its start (what both read may be stored twice, never lost).
fn is_the_file(file: &File, length: u64, checkpoint: &SourcePosition) -> bool {
    let covered = match generation::covered(&checkpoint.fingerprint) {
        Some(bytes) => bytes,
        None if checkpoint.offset == 0 => 0,
        None => return false,
    };
    length >= checkpoint.offset
        && generation::fingerprint(file, covered).is_ok_and(|print| print == checkpoint.fingerprint)
}

impl SourceReader {
    /// Whether the spool's beginning is settled (its batches may be sent); a spool that
    /// cannot say is taken as settled, for nothing would settle it.
    pub fn settled(&self) -> bool {
        self.spool
            .get()
            .resume_state()
            .map_or(true, |state| state == Resume::Settled)
    }

    /// Settles the spool's checkpoints once ingest has answered (nothing to do otherwise).
    pub(super) fn settle_checkpoints(&mut self) -> rusqlite::Result<()> {
        if self.spool.get().resume_state()? != Resume::Answered {
            return Ok(());
        }
        let checkpoints = self.spool.get().checkpoints()?;
        let mut done = Settled::default();
        let mut resumed = Vec::new();
        for checkpoint in &checkpoints {
            resumed.extend(self.settle_one(checkpoint, &mut done)?);
        }
        done.resumed = resumed.len() as u64;
        done.dropped_batches = self.spool.get().adopt(&resumed, now())?;
        for file in &resumed {
            // Held open at the offset read before: let go, so the next step starts afresh.
            drop(self.let_go(&(file.source.clone(), file.file.clone())));
        }
        self.spool.get().settle(done, checkpoints.len(), now())?;
        log::info!(
            "spool began after {} checkpoints of earlier spools: {} files resumed, {} gaps or \
             files not resumed, {} batches read again dropped",
            checkpoints.len(),
            done.resumed,
            done.gaps,
            done.dropped_batches
        );
        Ok(())
    }

    /// Records what became of a checkpoint's file that is not resumed (`event`, `said`).
    fn not_resumed(
        &mut self,
        at: &SourcePosition,
        event: &str,
        said: &str,
    ) -> rusqlite::Result<()> {
        self.spool
            .get()
            .note((&at.source, &at.file), (event, said), now())
    }

    /// The file to resume after `at`, if it is to be; else what became of it is recorded.
    fn settle_one(
        &mut self,
        at: &SourcePosition,
        done: &mut Settled,
    ) -> rusqlite::Result<Option<Adopted>> {
        let Some(source) = self.sources.iter().find(|s| s.id == at.source).cloned() else {
            let said = format!(
                "an earlier spool read this file of source {} to byte {}; this collector does \
                 not read that source",
                at.source, at.offset
            );
            self.not_resumed(at, "not-read", &said)?;
            return Ok(None);
        };
        // A file below the source's root only: a checkpoint is what a batch of this member
        // said, and the member's job chose its names.
        if relative_path_problem(&at.file, MAX_POSITION_FILE_BYTES).is_some() {
            let said = format!(
                "a checkpoint names {:?}, which is not a file below the source's root; left \
                 alone",
                escape_controls(&at.file)
            );
            self.not_resumed(at, "not-read", &said)?;
            return Ok(None);
        }
        let path = if at.file.is_empty() {
            source.path.clone()
        } else {
            source.path.join(&at.file)
        };
        let opened = match self.fence.open(&path) {
            Ok(file) => Some(file),
            Err(Refusal::Gone) => None,
            Err(Refusal::Refused(why)) => {
                log::warn!("source {}: checkpoint not settled: {why}", source.id);
                None
            }
        };
        let found = opened.and_then(|file| {
            let meta = file.metadata().ok()?;
            is_the_file(&file, meta.len(), at).then(|| key_of(&meta))
        });
        let Some(key) = found else {
            done.gaps += 1;
            let unknown = at.offset > 0 && generation::covered(&at.fingerprint).is_none();
            let why = if unknown {
                "its checkpoint holds no fingerprint of the file, so which file it was is not \
                 known: what both read may be stored twice"
                    .to_owned()
            } else {
                format!(
                    "the file there now is another or none: what that file held past byte {} \
                     is in no source",
                    at.offset
                )
            };
            let said = format!(
                "{}: an earlier spool read it to byte {} (generation {}), and {why}; the file \
                 there is read from its start",
                path.display(),
                at.offset,
                at.generation,
            );
            log::warn!("source {}: {}", source.id, escape_controls(&said));
            self.not_resumed(at, "gap", &said)?;
            return Ok(None);
        };
        // Read by this spool already as another file, or through a rotation since: which of
        // its batches hold what the checkpoint covers is not known. They are kept (sent):
        // points may be stored twice, never lost.
        let read = self.spool.get().position(&at.source, &at.file)?;
        if let Some(read) = read.filter(|r| r.file_key != key || r.generation != 1) {
            done.gaps += 1;
            let said = format!(
                "{}: changed while this spool began (generation {} read); not resumed after \
                 the earlier spool's checkpoint (byte {}): what both read may be stored twice",
                path.display(),
                read.generation,
                at.offset
            );
            log::warn!("source {}: {}", source.id, escape_controls(&said));
            self.not_resumed(at, "not-resumed", &said)?;
            return Ok(None);
        }
        let said = format!(
            "{}: resumed after an earlier spool's checkpoint, byte {} of generation {} (what \
             came before was delivered)",
            path.display(),
            at.offset,
            at.generation
        );
        Ok(Some(Adopted {
            source: at.source.clone(),
            file: at.file.clone(),
            position: SavedPosition {
                file_key: key,
                offset: at.offset,
                line: at.line,
                state: at.state.clone(),
                fingerprint: at.fingerprint.clone(),
                generation: at.generation,
            },
            said,
        }))
    }
}
