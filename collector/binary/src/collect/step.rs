//! One step of one file: the file and its generation (`choose`), one bounded read from the
//! saved position, and the batch sealed with the position it advances (with the failpoints
//! around the seal); the file is held open for the next step.

use std::path::Path;

use prost::bytes::Bytes;

use super::choose::Chosen;
use super::reader::{now, SourceReader, StepResult};
use super::{channel, jsonl, tensorboard, Position, SourceKind, SourceSpec};
use crate::collect::{generation, unfinished};
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
        let name = (source.id.clone(), relative.to_owned());
        let saved = self.spool.get().position(&source.id, relative)?;
        let Some(Chosen {
            mut file,
            key,
            start,
            length,
            finishing,
        }) = self.choose(source, path, relative, saved)?
        else {
            return Ok(true);
        };
        if length == start.offset {
            self.hold(name, key, file);
            return Ok(true);
        }
        let resume = Position {
            offset: start.offset,
            line: start.line,
            state: start.state,
        };
        let keys = self.config_keys.entry(source.id.clone()).or_default();
        let read = match source.kind {
            SourceKind::Jsonl => jsonl::read(
                &mut file,
                path,
                (&source.id, keys),
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
                    (&source.id, keys),
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
                // A renamed file is still to be finished: tried again until the wait for it
                // is over (`unfinished`), then the path's file is read.
                let over = finishing && {
                    let why = format!("it could not be read: {}", crate::collect::fence::plain(&e));
                    self.unfinished.seen(&name, &key, length, why)
                };
                self.hold(name, key, file);
                return Ok(!over);
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
            let fingerprint =
                generation::fingerprint_at(&file, step.position.offset, &start.fingerprint)
                    .unwrap_or_default();
            let position = SavedPosition {
                file_key: key.clone(),
                offset: step.position.offset,
                line: step.position.line,
                state: step.position.state.clone(),
                fingerprint,
                generation: start.generation,
            };
            let sealing = self.spool.get().seal(
                &mut step.draft,
                relative,
                &position,
                now(),
                &step.rejected,
                None,
            );
            let sealed = match sealing {
                Ok(sealed) => sealed,
                Err(e) => {
                    self.hold(name, key, file); // read again once the spool takes a write
                    return Err(e);
                }
            };
            failpoints::reach("seal");
            self.counters.batches += u64::from(sealed.is_some());
            self.counters.points += points;
            self.counters.rich += rich;
        }
        // An earlier file read to its end: what the path names now is read at the next step,
        // which comes at once. One that holds nothing more but an unfinished tail is waited
        // for (`unfinished`), as any file at its end, then given up at once.
        let at_end = if !finishing {
            step.at_end
        } else if step.position == resume && step.at_end {
            !self
                .unfinished
                .seen(&name, &key, length, unfinished::unended())
        } else {
            self.unfinished.forget(&name);
            false
        };
        // The records are sealed (or not taken): their buffer and columns serve the next step.
        self.kept.keep_step(step, records);
        self.hold(name, key, file);
        Ok(at_end)
    }
}
