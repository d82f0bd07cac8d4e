//! Sealing: a read step's draft as the next batch, with the position of the file it
//! advances, in one transaction; or a batch that advances no file (the integration
//! artifact's static config). A batch is inserted as its row with the payload's room, then
//! the payload written into its pages, and the next sequence moved on.

use prost::Message;
use rusqlite::{params, Transaction, TransactionBehavior, MAIN_DB};

use super::{
    record_event, save_generation, save_position, MemberKey, SavedPosition, Spool, KEPT_BYTES,
};
use crate::collect::draft::BatchDraft;
use crate::contract::proto::{Batch, BatchIdentity, SourcePosition};
use crate::contract::{MAX_POSITION_FILE_BYTES, MAX_POSITION_STATE_BYTES};
use crate::sources::names::{name_problem, relative_path_problem};

/// The position a batch carries (what a lost spool's successor resumes after): none when
/// the reader's state is over its bound, or the file is not one ingest takes as a position's
/// (a name with a control character: the batch's points are delivered all the same).
fn carried(source: &str, file: &str, position: &SavedPosition) -> Option<SourcePosition> {
    let fits = position.state.len() <= MAX_POSITION_STATE_BYTES
        && !position.state.contains('\0')
        && relative_path_problem(file, MAX_POSITION_FILE_BYTES).is_none()
        && name_problem(&position.fingerprint).is_none_or(|_| position.fingerprint.is_empty());
    fits.then(|| SourcePosition {
        source: source.to_owned(),
        file: file.to_owned(),
        fingerprint: position.fingerprint.clone(),
        generation: position.generation,
        offset: position.offset,
        line: position.line,
        state: position.state.clone(),
    })
}

/// Inserts `draft` (emptied, its columns kept for the next) as the batch of the next
/// sequence of `owner`'s spool `epoch`, encoded in `encoded`; returns its sequence.
fn insert(
    tx: &Transaction<'_>,
    (owner, epoch): (&MemberKey, &str),
    encoded: &mut Vec<u8>,
    draft: &mut BatchDraft,
    position: Option<SourcePosition>,
    sealed_at: f64,
) -> rusqlite::Result<u64> {
    let next: String = tx
        .prepare_cached("SELECT value FROM meta WHERE key = 'next_sequence'")?
        .query_row([], |r| r.get(0))?;
    let next: u64 = next.parse().unwrap_or(1);
    let batch = Batch {
        identity: Some(BatchIdentity {
            run_id: owner.run_id.clone(),
            attempt: owner.attempt,
            member: owner.member.clone(),
            spool_epoch: epoch.to_owned(),
            sequence: next,
        }),
        chunks: draft.take_chunks(),
        sealed_at,
        rich: std::mem::take(&mut draft.rich),
        session_starts: std::mem::take(&mut draft.session_starts),
        position,
        config: std::mem::take(&mut draft.config),
    };
    encoded.clear();
    batch
        .encode(encoded)
        .map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))?;
    draft.keep(batch.chunks);
    // The row made with the payload's room (its last column: `schema`), then the payload
    // written into its pages: a bound blob would be copied whole into two more buffers first.
    tx.prepare_cached(
        "INSERT INTO batches (sequence, payload, points) VALUES (?, zeroblob(?), ?)",
    )?
    .execute(params![next, encoded.len(), draft.points as u64])?;
    tx.blob_open(MAIN_DB, c"batches", c"payload", next as i64, false)?
        .write_all_at(encoded, 0)?;
    if encoded.capacity() > KEPT_BYTES {
        *encoded = Vec::new();
    }
    tx.prepare_cached("UPDATE meta SET value = ? WHERE key = 'next_sequence'")?
        .execute([(next + 1).to_string()])?;
    Ok(next)
}

impl Spool {
    /// Seals `draft` as the next batch and saves the file's `position` in one transaction;
    /// with an empty draft only the position moves. `rejected` counts records refused on
    /// the way, by reason; `event` is what happened to the file, if anything (its name and
    /// what it says, for `spool status`; counted per file and kind of event, the times it
    /// happened in `event_times`). Returns the batch's sequence, if one was sealed.
    pub fn seal(
        &mut self,
        draft: &mut BatchDraft,
        file: &str,
        position: &SavedPosition,
        sealed_at: f64,
        rejected: &[(String, u64)],
        event: Option<(&str, &str)>,
    ) -> rusqlite::Result<Option<u64>> {
        self.synchronous(true)?;
        let tx = self
            .db
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let mut sequence = None;
        if !draft.is_empty() {
            let carries = carried(&draft.source, file, position);
            let who = (&self.owner, self.epoch.as_str());
            sequence = Some(insert(
                &tx,
                who,
                &mut self.encoded,
                draft,
                carries,
                sealed_at,
            )?);
        }
        save_position(&tx, (&draft.source, file), position)?;
        let generation = (
            position.file_key.clone(),
            position.fingerprint.clone(),
            position.generation,
        );
        let named = (draft.source.clone(), file.to_owned());
        let written = self.generations.get(&named) == Some(&generation);
        if !written {
            save_generation(&tx, (&draft.source, file), position)?;
        }
        if let Some(said) = event {
            self.event_times = record_event(&tx, (&draft.source, file), said, sealed_at)?;
        }
        for (reason, count) in rejected {
            tx.prepare_cached(
                "INSERT INTO rejections VALUES (?, ?, ?) ON CONFLICT (source, reason) \
                 DO UPDATE SET count = count + excluded.count",
            )?
            .execute(params![draft.source, reason, count])?;
        }
        tx.commit()?;
        if !written {
            self.generations.insert(named, generation);
        }
        Ok(sequence)
    }

    /// Seals `draft` as the next batch, advancing no file's position (it carries none);
    /// returns its sequence, or None for an empty draft.
    pub fn seal_alone(
        &mut self,
        draft: &mut BatchDraft,
        sealed_at: f64,
    ) -> rusqlite::Result<Option<u64>> {
        if draft.is_empty() {
            return Ok(None);
        }
        self.synchronous(true)?;
        let tx = self
            .db
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let who = (&self.owner, self.epoch.as_str());
        let sequence = insert(&tx, who, &mut self.encoded, draft, None, sealed_at)?;
        tx.commit()?;
        Ok(Some(sequence))
    }
}
