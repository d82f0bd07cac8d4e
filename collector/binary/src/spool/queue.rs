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
        let mut query = self.db.prepare_cached(
            "SELECT sequence, payload, points FROM batches WHERE quarantined IS NULL \
             ORDER BY sequence LIMIT ?",
        )?;
        let rows = query.query_map([limit as u64], |r| {
            Ok(SealedBatch {
                sequence: r.get(0)?,
                payload: r.get(1)?,
                points: r.get(2)?,
            })
        })?;
        rows.collect()
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
