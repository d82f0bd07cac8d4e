//! One step of one file: its identity (a replaced file is a new file, read from its
//! start) and saved position, one bounded read, and the batch sealed with the position it
//! advances (with the failpoints around the seal).

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use prost::bytes::Bytes;

use super::reader::{now, SourceReader, StepResult};
use super::{channel, jsonl, tensorboard, Position, SourceKind, SourceSpec};
use crate::collect::fence::Refusal;
use crate::failpoints;
use crate::spool::SavedPosition;

impl SourceReader {
    /// Reads one step of a file; `previous` is the TensorBoard run's file before it.
    pub(super) fn step(
        &mut self,
        source: &SourceSpec,
        path: &Path,
        relative: &str,
        previous: &str,
    ) -> StepResult {
        // A first look by path (as the collector): an unchanged file is passed over unopened.
        let Ok(hint) = std::fs::metadata(path) else {
            return Ok(true);
        }; // not written yet
        let key_of = |meta: &std::fs::Metadata| format!("{}:{}", meta.dev(), meta.ino());
        let saved = self.spool.get().position(&source.id, relative)?;
        if saved
            .as_ref()
            .is_some_and(|s| s.file_key == key_of(&hint) && s.offset == hint.len())
        {
            return Ok(true);
        }
        let mut file = match self.fence.open(path) {
            Ok(file) => file,
            Err(Refusal::Gone) => return Ok(true),
            Err(Refusal::Refused(why)) => {
                let key = key_of(&hint);
                self.report_once(path, &format!("source {}: refused: {why}", source.id), &key);
                return Ok(true);
            }
        };
        // The file opened decides, by its descriptor: the path may name another file by now,
        // or (opened as the training user) resolve to another than the collector's look saw.
        let Ok(meta) = file.metadata() else {
            return Ok(true);
        };
        let key = key_of(&meta);
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
        let read = match source.kind {
            SourceKind::Jsonl => jsonl::read(
                &mut file,
                path,
                &source.id,
                &resume,
                self.bounds.max_points,
                self.bounds.max_bytes,
                &mut self.kept,
            )
            .map(|step| (step, Bytes::new())),
            SourceKind::Channel => {
                let spec = source
                    .channel
                    .as_ref()
                    .expect("a channel source has its channel");
                let budget = self
                    .budgets
                    .entry(source.id.clone())
                    .or_insert_with(|| channel::Budget::new(spec.max_bytes_per_minute));
                channel::read(
                    &mut file,
                    path,
                    &source.id,
                    spec,
                    budget,
                    &resume,
                    self.bounds.max_bytes,
                )
                .map(|step| (step, Bytes::new()))
            }
            SourceKind::TensorBoard => {
                let before = if !previous.is_empty() && resume.state.is_empty() {
                    self.spool
                        .get()
                        .position(&source.id, previous)?
                        .map(|p| p.state)
                } else {
                    None
                };
                tensorboard::read(
                    &mut file,
                    relative,
                    &source.id,
                    &resume,
                    self.bounds,
                    before.as_deref().unwrap_or(""),
                    &mut self.kept,
                )
            }
        };
        let (mut step, records) = match read {
            Ok(read) => read,
            Err(e) => {
                self.report_once(
                    path,
                    &format!(
                        "source {}: {}: {}",
                        source.id,
                        path.display(),
                        crate::collect::fence::plain(&e)
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
            self.counters.sealed_bytes += step.draft.approx_bytes as u64;
            let position = SavedPosition {
                file_key: key,
                offset: step.position.offset,
                line: step.position.line,
                state: step.position.state.clone(),
            };
            let sealed = self.spool.get().seal(
                &mut step.draft,
                relative,
                &position,
                now(),
                &step.rejected,
            )?;
            failpoints::reach("seal");
            self.counters.batches += u64::from(sealed.is_some());
            self.counters.points += points;
            self.counters.rich += rich;
        }
        let at_end = step.at_end;
        // The records are sealed (or not taken): their buffer and columns serve the next step.
        self.kept.keep_step(step, records);
        Ok(at_end)
    }
}
