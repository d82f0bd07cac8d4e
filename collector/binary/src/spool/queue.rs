//! The spool as the sender's queue: sealed batches in sequence order, deleted once ingest
//! ACKs them, set aside (quarantined, with the reason) when ingest will never take them.

use rusqlite::{params, MAIN_DB};

use super::{SealedBatch, Spool};
use crate::buffers::reclaimed;

/// Payload buffers kept for the next batches read: as many as are in flight at once.
const KEPT_PAYLOADS: usize = 8;
/// The largest payload buffer kept (a batch of 20,000 scalars is about 400 KB).
const KEPT_PAYLOAD_BYTES: usize = 1 << 20;

/// The pending batches, oldest first, and how many: both answered from `batches_pending`.
const PENDING: &str =
    "SELECT sequence, points FROM batches WHERE quarantined IS NULL ORDER BY sequence";
const PENDING_COUNT: &str = "SELECT count(*) FROM batches WHERE quarantined IS NULL";

/// What a spool holds: its pending batches and their points, the batches quarantined, and
/// the payload bytes of all of them (what its cap counts: `stored_bytes`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Holding {
    pub batches: u64,
    pub points: u64,
    pub quarantined: u64,
    pub bytes: u64,
}

impl Spool {
    /// The oldest `limit` batches not quarantined, in sequence order, listed from the index
    /// `batches_pending` (a row's `points` and `quarantined` come after its payload, whose
    /// pages a scan of the table would walk for every row). Each payload is read
    /// from its row's pages into a buffer a batch sent before gave back (`give_back`): read as
    /// a column, SQLite would copy it whole into a buffer of its own first, and both would be
    /// fresh pages mapped for every batch.
    pub fn pending(&mut self, limit: usize) -> rusqlite::Result<Vec<SealedBatch>> {
        // No `LIMIT ?`: SQLite prepares a statement with a bound LIMIT again on every run
        // (each seal by the reader's connection expires its plan); the rows are stepped
        // lazily, so only `limit` of them are read.
        let heads: Vec<(u64, u64)> = self
            .db
            .prepare_cached(PENDING)?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .take(limit)
            .collect::<rusqlite::Result<_>>()?;
        let mut batches = Vec::with_capacity(heads.len());
        for (sequence, points) in heads {
            let blob = self
                .db
                .blob_open(MAIN_DB, c"batches", c"payload", sequence as i64, true)?;
            let mut payload = self.payloads.pop().unwrap_or_default();
            payload.resize(blob.len(), 0);
            blob.read_at_exact(&mut payload, 0)?;
            batches.push(SealedBatch {
                sequence,
                payload: payload.into(),
                points,
            });
        }
        Ok(batches)
    }

    /// Takes back the payload buffers of batches settled (or left to the next round) for the
    /// next `pending`, when nothing holds a view of them any more.
    pub fn give_back(&mut self, batches: Vec<SealedBatch>) {
        for batch in batches {
            if self.payloads.len() >= KEPT_PAYLOADS {
                return;
            }
            if let Some(payload) = reclaimed(batch.payload) {
                if payload.capacity() <= KEPT_PAYLOAD_BYTES {
                    self.payloads.push(payload);
                }
            }
        }
    }

    pub fn pending_count(&self) -> rusqlite::Result<u64> {
        self.db
            .prepare_cached(PENDING_COUNT)?
            .query_row([], |r| r.get(0))
    }

    /// Deletes an ACKed batch. The sender's commits do not wait for the disk: one lost to a
    /// power cut is a batch sent again (ingest's identity, the projector's ledger, drop the
    /// duplicate) or refused again.
    pub fn acknowledge(&mut self, sequence: u64) -> rusqlite::Result<()> {
        self.synchronous(false)?;
        self.db
            .prepare_cached("DELETE FROM batches WHERE sequence = ?")?
            .execute([sequence])
            .map(drop)
    }

    /// Keeps a batch the service will never accept, with the reason, out of the queue.
    pub fn quarantine(&mut self, sequence: u64, reason: &str) -> rusqlite::Result<()> {
        self.synchronous(false)?;
        self.db
            .execute(
                "UPDATE batches SET quarantined = ? WHERE sequence = ?",
                params![reason, sequence],
            )
            .map(drop)
    }

    pub fn quarantined(&self) -> rusqlite::Result<Vec<(u64, String)>> {
        let mut query = self.db.prepare(
            "SELECT sequence, quarantined FROM batches WHERE quarantined IS NOT NULL \
             ORDER BY sequence",
        )?;
        let rows = query.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
        rows.collect()
    }

    /// What the spool holds, in one pass over its rows (their payloads' lengths are read
    /// from the rows' headers, not their pages).
    pub fn holding(&self) -> rusqlite::Result<Holding> {
        self.db
            .prepare_cached(
                "SELECT count(*) - count(quarantined), ifnull(sum(points) FILTER (WHERE \
                 quarantined IS NULL), 0), count(quarantined), ifnull(sum(length(payload)), 0) \
                 FROM batches",
            )?
            .query_row([], |r| {
                // Counts and sums of a table: never negative.
                let count = |at| r.get::<_, i64>(at).map(|n| n as u64);
                Ok(Holding {
                    batches: count(0)?,
                    points: count(1)?,
                    quarantined: count(2)?,
                    bytes: count(3)?,
                })
            })
    }

    pub fn stored_bytes(&self) -> rusqlite::Result<u64> {
        self.db
            .prepare_cached("SELECT coalesce(sum(length(payload)), 0) FROM batches")?
            .query_row([], |r| r.get(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collect::draft::BatchDraft;
    use crate::spool::{MemberKey, SavedPosition};

    const LOCAL: &str = "1 0 8:1 / / rw - ext4 /dev/sda1 rw\n";

    fn place(name: &str) -> std::path::PathBuf {
        let path = std::env::temp_dir().join(format!("tp-spool-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        path
    }

    fn draft(points: i64) -> BatchDraft {
        let mut draft = BatchDraft::new("s", "");
        for step in 0..points {
            draft.add_point("loss", step, 0.0, 1.0);
        }
        draft
    }

    fn owner() -> MemberKey {
        MemberKey {
            run_id: "run-1".into(),
            attempt: 1,
            member: "rank-0".into(),
        }
    }

    fn at(offset: u64) -> SavedPosition {
        SavedPosition {
            generation: 1,
            file_key: "1:2".into(),
            offset,
            line: offset,
            state: String::new(),
            fingerprint: String::new(),
        }
    }

    #[test]
    fn pending_batches_are_listed_from_the_index_not_the_payloads() {
        let directory = place("pending-plan");
        let spool = Spool::open(&directory, &owner(), LOCAL).unwrap();
        for query in [PENDING, PENDING_COUNT] {
            let plan: String = spool
                .db
                .query_row(&format!("EXPLAIN QUERY PLAN {query}"), [], |r| r.get(3))
                .unwrap();
            assert!(
                plan.contains("COVERING INDEX batches_pending"),
                "{query}: {plan}"
            );
        }
        std::fs::remove_dir_all(&directory).unwrap();
    }

    #[test]
    fn what_the_spool_holds_counts_quarantined_batches_only_in_its_bytes() {
        let (directory, mut spool) = crate::spool::scratch("holding");
        assert_eq!(spool.holding(), Ok(Holding::default()));
        for (points, offset) in [(3, 10), (5, 20)] {
            spool
                .seal(&mut draft(points), "", &at(offset), 0.0, &[], None)
                .unwrap();
        }
        spool.quarantine(1, "refused").unwrap();
        let held = spool.holding().unwrap();
        assert_eq!((held.batches, held.points, held.quarantined), (1, 5, 1));
        assert_eq!(held.bytes, spool.stored_bytes().unwrap());
        assert!(held.bytes > 0);
        std::fs::remove_dir_all(&directory).unwrap();
    }

    #[test]
    fn a_seal_that_fails_moves_neither_batch_nor_position() {
        let directory = place("failed-seal");
        let mut spool = Spool::open(&directory, &owner(), LOCAL).unwrap();
        assert_eq!(
            spool.seal(&mut draft(3), "", &at(10), 0.0, &[], None),
            Ok(Some(1))
        );
        // The position's write fails after the batch's insert, inside the same transaction.
        spool
            .db
            .execute_batch(
                "CREATE TRIGGER no_insert BEFORE INSERT ON positions WHEN NEW.offset = 20 \
                 BEGIN SELECT RAISE(ABORT, 'disk full'); END; \
                 CREATE TRIGGER no_update BEFORE UPDATE ON positions WHEN NEW.offset = 20 \
                 BEGIN SELECT RAISE(ABORT, 'disk full'); END;",
            )
            .unwrap();
        assert!(spool
            .seal(&mut draft(5), "", &at(20), 0.0, &[], None)
            .is_err());
        assert_eq!(spool.position("s", ""), Ok(Some(at(10))));
        let pending: Vec<u64> = spool
            .pending(10)
            .unwrap()
            .iter()
            .map(|b| b.sequence)
            .collect();
        assert_eq!(pending, vec![1]);
        // Nor was a sequence number spent on it.
        assert_eq!(
            spool.seal(&mut draft(2), "", &at(30), 0.0, &[], None),
            Ok(Some(2))
        );
        std::fs::remove_dir_all(&directory).unwrap();
    }
}
