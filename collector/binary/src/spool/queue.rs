//! The spool as the sender's queue: sealed batches in sequence order, deleted once ingest
//! ACKs them, set aside (quarantined, with the reason) when ingest will never take them.

use rusqlite::params;

use super::{SealedBatch, Spool};

impl Spool {
    /// This connection, the sender's, commits without waiting for the disk: what it writes
    /// is deletions of ACKed batches and quarantine marks. One lost to a power cut is a batch
    /// sent again (ingest's identity, the projector's ledger, drop the duplicate) or refused
    /// again; a seal, committed `synchronous=FULL` by the reader's connection to the same
    /// WAL, makes every frame before it durable too, and checkpoints sync either way.
    pub fn into_queue(self) -> rusqlite::Result<Self> {
        self.db.pragma_update(None, "synchronous", "NORMAL")?;
        Ok(self)
    }

    /// The oldest `limit` batches not quarantined, in sequence order.
    pub fn pending(&self, limit: usize) -> rusqlite::Result<Vec<SealedBatch>> {
        // No `LIMIT ?`: SQLite prepares a statement with a bound LIMIT again on every run
        // (each seal by the reader's connection expires its plan); the rows are stepped
        // lazily, so only `limit` of them are read.
        let mut query = self.db.prepare_cached(
            "SELECT sequence, payload, points FROM batches WHERE quarantined IS NULL \
             ORDER BY sequence",
        )?;
        let rows = query.query_map([], |r| {
            Ok(SealedBatch {
                sequence: r.get(0)?,
                payload: r.get::<_, Vec<u8>>(1)?.into(),
                points: r.get(2)?,
            })
        })?;
        rows.take(limit).collect()
    }

    pub fn pending_count(&self) -> rusqlite::Result<u64> {
        self.db
            .prepare_cached("SELECT count(*) FROM batches WHERE quarantined IS NULL")?
            .query_row([], |r| r.get(0))
    }

    pub fn acknowledge(&self, sequence: u64) -> rusqlite::Result<()> {
        self.db
            .prepare_cached("DELETE FROM batches WHERE sequence = ?")?
            .execute([sequence])
            .map(drop)
    }

    /// Keeps a batch the service will never accept, with the reason, out of the queue.
    pub fn quarantine(&self, sequence: u64, reason: &str) -> rusqlite::Result<()> {
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

    pub fn stored_bytes(&self) -> rusqlite::Result<u64> {
        self.db
            .prepare_cached("SELECT coalesce(sum(length(payload)), 0) FROM batches")?
            .query_row([], |r| r.get(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::draft::BatchDraft;
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

    fn at(offset: u64) -> SavedPosition {
        SavedPosition {
            file_key: "1:2".into(),
            offset,
            line: offset,
            state: String::new(),
        }
    }

    #[test]
    fn a_seal_that_fails_moves_neither_batch_nor_position() {
        let directory = place("failed-seal");
        let owner = MemberKey {
            run_id: "run-1".into(),
            attempt: 1,
            member: "rank-0".into(),
        };
        let mut spool = Spool::open(&directory, &owner, LOCAL).unwrap();
        assert_eq!(
            spool.seal(&mut draft(3), "", &at(10), 0.0, &[]),
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
        assert!(spool.seal(&mut draft(5), "", &at(20), 0.0, &[]).is_err());
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
            spool.seal(&mut draft(2), "", &at(30), 0.0, &[]),
            Ok(Some(2))
        );
        std::fs::remove_dir_all(&directory).unwrap();
    }
}
