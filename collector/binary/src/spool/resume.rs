//! A new spool of a member that may have delivered before: a host re-imaged, a spool
//! directory lost. What the old spool sealed and ingest made durable is in the read models,
//! with the place in each source file it was read to (a batch carries its `SourcePosition`).
//!
//! A new spool begins `pending`: the reader reads as always (a source's data is spooled
//! at once, whatever the gateway does), but nothing is sent. The sender asks ingest for the
//! member's checkpoints (`GetCheckpoints`) and keeps the answer here (`answered`). The
//! reader then settles each (`collect::resume`): a file still at its path, with the bytes
//! the checkpoint fingerprinted and at least as long, resumes after the checkpoint, and the
//! batches this spool had read of it are dropped in the same transaction (they hold what was
//! delivered, or what is read again from the checkpoint on); a file no longer there is a
//! gap, said with its bounds. Then the spool is `settled`, and its batches are sent.

use std::collections::HashSet;

use prost::Message;
use rusqlite::{params, OptionalExtension, TransactionBehavior};
use serde_json::{json, Value};

use super::{record_event, save_generation, save_position, SavedPosition, Spool};
use crate::contract::proto::SourcePosition;

/// A sealed batch read for its position only (`Batch.position`, field 6): the rest of its
/// payload is passed over, not decoded.
#[derive(Clone, PartialEq, Message)]
struct Positioned {
    #[prost(message, optional, tag = "6")]
    position: Option<SourcePosition>,
}

/// The meta key of where the spool's beginning stands: "pending", "answered", or (settled)
/// what was learnt, as JSON. A spool made before it was written has none: settled.
const KEY: &str = "resume";

/// The meta row a new spool is made with.
pub const PENDING: (&str, &str) = (KEY, "pending");
const ANSWERED: &str = "answered";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resume {
    /// The checkpoints are not known yet: nothing is sent.
    Pending,
    /// Known, not yet settled by the reader: nothing is sent.
    Answered,
    Settled,
}

/// A file whose reading resumes after its checkpoint, and what is said of it.
#[derive(Debug, Clone)]
pub struct Adopted {
    pub source: String,
    pub file: String,
    pub position: SavedPosition,
    pub said: String,
}

/// What settling one checkpoint did (`spool status`, the spool's `resume` summary).
#[derive(Debug, Default, Clone, Copy)]
pub struct Settled {
    pub resumed: u64,
    pub gaps: u64,
    pub dropped_batches: u64,
}

impl Spool {
    pub fn resume_state(&self) -> rusqlite::Result<Resume> {
        let value: Option<String> = self
            .db
            .prepare_cached("SELECT value FROM meta WHERE key = ?")?
            .query_row([KEY], |r| r.get(0))
            .optional()?;
        Ok(match value.as_deref() {
            Some("pending") => Resume::Pending,
            Some(ANSWERED) => Resume::Answered,
            _ => Resume::Settled,
        })
    }

    /// Keeps ingest's answer: the member's checkpoints and the epochs of its earlier spools.
    pub fn answer(
        &mut self,
        positions: &[SourcePosition],
        epochs: &[String],
    ) -> rusqlite::Result<()> {
        let tx = self
            .db
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        for p in positions {
            tx.prepare_cached("INSERT OR REPLACE INTO checkpoints VALUES (?, ?, ?, ?, ?, ?, ?)")?
                .execute(params![
                    p.source,
                    p.file,
                    p.fingerprint,
                    p.generation,
                    p.offset,
                    p.line,
                    p.state
                ])?;
        }
        tx.prepare_cached("INSERT OR REPLACE INTO meta VALUES ('earlier_epochs', ?)")?
            .execute([json!(epochs).to_string()])?;
        tx.prepare_cached("UPDATE meta SET value = ? WHERE key = ?")?
            .execute([ANSWERED, KEY])?;
        tx.commit()
    }

    /// The checkpoints ingest gave, in (source, file) order.
    pub fn checkpoints(&self) -> rusqlite::Result<Vec<SourcePosition>> {
        self.db
            .prepare_cached(
                "SELECT source, file, fingerprint, generation, offset, line, state \
                 FROM checkpoints ORDER BY source, file",
            )?
            .query_map([], |r| {
                Ok(SourcePosition {
                    source: r.get(0)?,
                    file: r.get(1)?,
                    fingerprint: r.get(2)?,
                    generation: r.get(3)?,
                    offset: r.get(4)?,
                    line: r.get(5)?,
                    state: r.get(6)?,
                })
            })?
            .collect()
    }

    /// Reading each file of `resumed` goes on from its position: in one transaction the
    /// batches this spool sealed of those files are dropped (none was sent: the spool is not
    /// settled; each payload is decoded once, whatever the number of files), the positions
    /// saved, and each `resumed` event recorded. Returns the batches dropped.
    pub fn adopt(&mut self, resumed: &[Adopted], at: f64) -> rusqlite::Result<u64> {
        let files: HashSet<(&str, &str)> = resumed
            .iter()
            .map(|a| (a.source.as_str(), a.file.as_str()))
            .collect();
        let tx = self
            .db
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let mut read_again = Vec::new();
        {
            let mut sealed = tx.prepare("SELECT sequence, payload FROM batches")?;
            let mut rows = sealed.query([])?;
            while let Some(row) = rows.next()? {
                let of_a_file = Positioned::decode(row.get_ref(1)?.as_blob()?)
                    .ok()
                    .and_then(|b| b.position)
                    .is_some_and(|p| files.contains(&(p.source.as_str(), p.file.as_str())));
                if of_a_file {
                    read_again.push(row.get::<_, u64>(0)?);
                }
            }
        }
        for sequence in &read_again {
            tx.execute("DELETE FROM batches WHERE sequence = ?", [sequence])?;
        }
        for a in resumed {
            let named = (a.source.as_str(), a.file.as_str());
            save_position(&tx, named, &a.position)?;
            save_generation(&tx, named, &a.position)?;
            record_event(&tx, named, ("resumed", &a.said), at)?;
        }
        tx.commit()?;
        for a in resumed {
            self.forget_generation(&a.source, &a.file);
        }
        Ok(read_again.len() as u64)
    }

    /// A checkpoint whose file is not to be resumed: only the event is recorded.
    pub fn note(
        &mut self,
        (source, file): (&str, &str),
        said: (&str, &str),
        at: f64,
    ) -> rusqlite::Result<()> {
        record_event(&self.db, (source, file), said, at).map(|_| ())
    }

    /// The spool is settled: what was learnt is kept as its `resume` summary.
    pub fn settle(&mut self, done: Settled, checkpoints: usize, at: f64) -> rusqlite::Result<()> {
        let epochs: Value = self
            .db
            .query_row(
                "SELECT value FROM meta WHERE key = 'earlier_epochs'",
                [],
                |r| r.get::<_, String>(0),
            )
            .optional()?
            .and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or(Value::Null);
        let summary = json!({
            "at": at,
            "checkpoints": checkpoints,
            "resumed": done.resumed,
            "gaps": done.gaps,
            "dropped_batches": done.dropped_batches,
            "earlier_epochs": epochs,
        });
        self.db.execute(
            "UPDATE meta SET value = ? WHERE key = ?",
            [summary.to_string().as_str(), KEY],
        )?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collect::draft::BatchDraft;
    use crate::spool::{scratch, scratch_owner, SCRATCH_MOUNTS};

    fn at(offset: u64) -> SavedPosition {
        SavedPosition {
            file_key: "1:2".into(),
            offset,
            line: offset,
            state: String::new(),
            fingerprint: "10:00000001".into(),
            generation: 1,
        }
    }

    fn sealed_of(spool: &mut Spool, source: &str, file: &str, offset: u64) {
        let mut draft = BatchDraft::new(source, "");
        draft.add_point("loss", offset as i64, 0.0, 1.0);
        spool
            .seal(&mut draft, file, &at(offset), 0.0, &[], None)
            .unwrap();
    }

    #[test]
    fn a_new_spool_sends_nothing_until_its_checkpoints_are_settled() {
        let (directory, mut spool) = scratch("resume");
        assert_eq!(spool.resume_state(), Ok(Resume::Pending));
        // Read before the answer: two batches of a.jsonl, one of b.jsonl.
        sealed_of(&mut spool, "a", "", 10);
        sealed_of(&mut spool, "a", "", 20);
        sealed_of(&mut spool, "b", "", 5);
        let checkpoint = SourcePosition {
            source: "a".into(),
            offset: 15,
            line: 15,
            fingerprint: "10:00000001".into(),
            generation: 1,
            ..SourcePosition::default()
        };
        spool
            .answer(std::slice::from_ref(&checkpoint), &["e1".into()])
            .unwrap();
        assert_eq!(spool.resume_state(), Ok(Resume::Answered));
        assert_eq!(spool.checkpoints(), Ok(vec![checkpoint]));
        let resumed = Adopted {
            source: "a".into(),
            file: String::new(),
            position: at(15),
            said: "after byte 15".into(),
        };
        let dropped = spool.adopt(&[resumed], 1.0).unwrap();
        assert_eq!(dropped, 2); // a's, read again from byte 15; b's batch stays
        assert_eq!(spool.pending_count(), Ok(1));
        assert_eq!(spool.position("a", "").unwrap().map(|p| p.offset), Some(15));
        spool.settle(Settled::default(), 1, 2.0).unwrap();
        assert_eq!(spool.resume_state(), Ok(Resume::Settled));
        // A spool opened again is not asked again.
        drop(spool);
        let owner = scratch_owner();
        let spool = Spool::open(&directory, &owner, SCRATCH_MOUNTS).unwrap();
        assert_eq!(spool.resume_state(), Ok(Resume::Settled));
        std::fs::remove_dir_all(&directory).unwrap();
    }
}
