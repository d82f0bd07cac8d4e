//! The spool's tables. Every collector of the project reads a spool another began, so the
//! layout only ever changes by a step `migrate` takes on opening, in the opening transaction.
//!
//! A batch's payload is the last column of its row: SQLite writes a `zeroblob` that ends a
//! row straight into the row's pages, and one followed by other columns is first made in
//! memory, whole, then copied into a record, whole, before the pages (two buffers of the
//! batch's size, mapped afresh for every batch). A partial index lists the pending batches,
//! so the sender does not walk each row's payload pages to find a column after it.

use rusqlite::{Connection, OptionalExtension};

pub const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS positions (
    source TEXT NOT NULL, file TEXT NOT NULL, file_key TEXT NOT NULL,
    offset INTEGER NOT NULL, line INTEGER NOT NULL, state TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (source, file));
CREATE TABLE IF NOT EXISTS generations (
    source TEXT NOT NULL, file TEXT NOT NULL, file_key TEXT NOT NULL,
    fingerprint TEXT NOT NULL, generation INTEGER NOT NULL, PRIMARY KEY (source, file));
CREATE TABLE IF NOT EXISTS source_events (
    source TEXT NOT NULL, file TEXT NOT NULL, event TEXT NOT NULL, count INTEGER NOT NULL,
    first_at REAL NOT NULL, last_at REAL NOT NULL, detail TEXT NOT NULL,
    PRIMARY KEY (source, file, event));
CREATE TABLE IF NOT EXISTS checkpoints (
    source TEXT NOT NULL, file TEXT NOT NULL, fingerprint TEXT NOT NULL,
    generation INTEGER NOT NULL, offset INTEGER NOT NULL, line INTEGER NOT NULL,
    state TEXT NOT NULL, PRIMARY KEY (source, file));
CREATE TABLE IF NOT EXISTS rejections (
    source TEXT NOT NULL, reason TEXT NOT NULL, count INTEGER NOT NULL,
    PRIMARY KEY (source, reason));
CREATE TABLE IF NOT EXISTS batches (
    sequence INTEGER PRIMARY KEY, points INTEGER NOT NULL, quarantined TEXT,
    payload BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS batches_pending ON batches (sequence, points, quarantined)
    WHERE quarantined IS NULL;
";

/// A spool of an earlier layout gets today's, in the caller's transaction: a batches table
/// with its payload before other columns (as spools were written until 2026-12) is moved
/// over as it is, quarantined batches included. Generations and source events are tables
/// of their own (`SCHEMA`), so a collector of before can still write a spool a newer one
/// opened: its positions are as they were.
pub fn migrate(db: &Connection) -> rusqlite::Result<()> {
    let last: Option<String> = db
        .query_row(
            "SELECT name FROM pragma_table_info('batches') ORDER BY cid DESC LIMIT 1",
            [],
            |r| r.get(0),
        )
        .optional()?;
    if last.is_none_or(|column| column == "payload") {
        return Ok(());
    }
    db.execute_batch(
        "CREATE TABLE batches_payload_last (
             sequence INTEGER PRIMARY KEY, points INTEGER NOT NULL, quarantined TEXT,
             payload BLOB NOT NULL);
         INSERT INTO batches_payload_last (sequence, points, quarantined, payload)
             SELECT sequence, points, quarantined, payload FROM batches;
         DROP TABLE batches;
         ALTER TABLE batches_payload_last RENAME TO batches;",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spool_of_the_older_layout_keeps_its_batches_with_the_payload_last() {
        let db = Connection::open_in_memory().unwrap();
        db.execute_batch(
            "CREATE TABLE batches (
                 sequence INTEGER PRIMARY KEY, payload BLOB NOT NULL, points INTEGER NOT NULL,
                 quarantined TEXT);
             INSERT INTO batches VALUES (1, x'0102', 7, NULL), (2, x'03', 1, 'refused');",
        )
        .unwrap();
        migrate(&db).unwrap();
        db.execute_batch(SCHEMA).unwrap();
        migrate(&db).unwrap(); // a second opening changes nothing
        let columns: Vec<String> = db
            .prepare("SELECT name FROM pragma_table_info('batches') ORDER BY cid")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(columns, ["sequence", "points", "quarantined", "payload"]);
        let rows: Vec<(u64, u64, Option<String>, Vec<u8>)> = db
            .prepare("SELECT sequence, points, quarantined, payload FROM batches ORDER BY 1")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(
            rows,
            [
                (1, 7, None, vec![1, 2]),
                (2, 1, Some("refused".to_owned()), vec![3])
            ]
        );
    }
}
