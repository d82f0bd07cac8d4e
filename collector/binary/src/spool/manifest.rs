//! What a late delivery's credential is asked for and held to: the spool's sealed batches,
//! each as its sequence and its leaf hash (`deliver::tree`). The list is kept in the spool
//! when first made, so a delivery cut short goes on under the same credential: the batches
//! delivered since are gone from the spool, but the tree the credential names is not.

use rusqlite::{OptionalExtension, MAIN_DB};
use serde_json::{json, Value};

use super::Spool;
use crate::deliver::tree::{hex, leaf, Hash};

/// The meta key of the kept list: `{"epoch": ..., "batches": [[sequence, "leaf hex"], ...]}`.
const KEY: &str = "delivery_manifest";

/// One batch of the list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    pub sequence: u64,
    pub leaf: Hash,
}

fn unhex(text: &str) -> Option<Hash> {
    let bytes: Option<Vec<u8>> = (0..text.len())
        .step_by(2)
        .map(|i| {
            text.get(i..i + 2)
                .and_then(|b| u8::from_str_radix(b, 16).ok())
        })
        .collect();
    bytes.and_then(|b| Hash::try_from(b).ok())
}

impl Spool {
    /// The batches waiting to be sent (quarantined ones are not: ingest refused them for
    /// good), each hashed, in sequence order, with their points.
    pub fn pending_entries(&mut self) -> rusqlite::Result<Vec<(Entry, u64)>> {
        let heads: Vec<(u64, u64)> = self
            .db
            .prepare(
                "SELECT sequence, points FROM batches WHERE quarantined IS NULL ORDER BY sequence",
            )?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<rusqlite::Result<_>>()?;
        let mut entries = Vec::with_capacity(heads.len());
        let mut payload = Vec::new();
        for (sequence, points) in heads {
            let blob = self
                .db
                .blob_open(MAIN_DB, c"batches", c"payload", sequence as i64, true)?;
            payload.resize(blob.len(), 0);
            blob.read_at_exact(&mut payload, 0)?;
            let leaf = leaf(sequence, &payload);
            entries.push((Entry { sequence, leaf }, points));
        }
        Ok(entries)
    }

    /// The list kept by an earlier `deliver` of this spool, if any (and readable).
    pub fn kept_manifest(&self) -> rusqlite::Result<Option<Vec<Entry>>> {
        let text: Option<String> = self
            .db
            .query_row("SELECT value FROM meta WHERE key = ?", [KEY], |r| r.get(0))
            .optional()?;
        let parsed = text.and_then(|t| serde_json::from_str::<Value>(&t).ok());
        let Some(batches) = parsed.as_ref().and_then(|v| v["batches"].as_array()) else {
            return Ok(None);
        };
        let entries: Option<Vec<Entry>> = batches
            .iter()
            .map(|pair| {
                Some(Entry {
                    sequence: pair.get(0)?.as_u64()?,
                    leaf: unhex(pair.get(1)?.as_str()?)?,
                })
            })
            .collect();
        Ok(entries.filter(|e| !e.is_empty()))
    }

    pub fn keep_manifest(&mut self, entries: &[Entry]) -> rusqlite::Result<()> {
        let batches: Vec<Value> = entries
            .iter()
            .map(|e| json!([e.sequence, hex(&e.leaf)]))
            .collect();
        let kept = json!({"epoch": self.epoch, "batches": batches});
        self.db
            .execute(
                "INSERT OR REPLACE INTO meta VALUES (?, ?)",
                [KEY, kept.to_string().as_str()],
            )
            .map(|_| ())
    }
}
