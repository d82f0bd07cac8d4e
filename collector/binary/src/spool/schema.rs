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
    fingerprint TEXT NOT NULL DEFAULT '', generation INTEGER NOT NULL DEFAULT 1,
    PRIMARY KEY (source, file));
CREATE TABLE IF NOT EXISTS source_events (
    at REAL NOT NULL, source TEXT NOT NULL, file TEXT NOT NULL, event TEXT NOT NULL,
    detail TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS rejections (
    source TEXT NOT NULL, reason TEXT NOT NULL, count INTEGER NOT NULL,
    PRIMARY KEY (source, reason));
CREATE TABLE IF NOT EXISTS batches (
    sequence INTEGER PRIMARY KEY, points INTEGER NOT NULL, quarantined TEXT,
    payload BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS batches_pending ON batches (sequence, points, quarantined)
    WHERE quarantined IS NULL;
";

/// A spool of an earlier layout gets today's, in the caller's transaction: positions gain
/// the file's fingerprint and generation (`positions_generations`), and a batches table
/// with its payload before other columns (as spools were written until 2026-12) is moved
/// over as it is, quarantined batches included.
pub fn migrate(db: &Connection) -> rusqlite::Result<()> {
    positions_generations(db)?;
    payload_last(db)
}

/// Positions made before generations: their file's fingerprint is not known yet (the next
/// read takes it), and they are its first generation.
fn positions_generations(db: &Connection) -> rusqlite::Result<()> {
    let columns: Vec<String> = db
        .prepare("SELECT name FROM pragma_table_info('positions')")?
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    if columns.is_empty() || columns.iter().any(|c| c == "fingerprint") {
        return Ok(());
    }
    db.execute_batch(
        "ALTER TABLE positions ADD COLUMN fingerprint TEXT NOT NULL DEFAULT '';
         ALTER TABLE positions ADD COLUMN generation INTEGER NOT NULL DEFAULT 1;",
    )
}

fn payload_last(db: &Connection) -> rusqlite::Result<()> {
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

    #[test]
    fn positions_of_before_generations_are_their_files_first_generation_unprinted() {
        let db = Connection::open_in_memory().unwrap();
        db.execute_batch(
            "CREATE TABLE positions (
                 source TEXT NOT NULL, file TEXT NOT NULL, file_key TEXT NOT NULL,
                 offset INTEGER NOT NULL, line INTEGER NOT NULL, state TEXT NOT NULL DEFAULT '',
                 PRIMARY KEY (source, file));
             INSERT INTO positions VALUES ('m', '', '1:2', 40, 3, '');",
        )
        .unwrap();
        migrate(&db).unwrap();
        db.execute_batch(SCHEMA).unwrap();
        migrate(&db).unwrap(); // a second opening changes nothing
        let row: (u64, String, u64) = db
            .query_row(
                "SELECT offset, fingerprint, generation FROM positions",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .unwrap();
        assert_eq!(row, (40, String::new(), 1));
        let events: u64 = db
            .query_row("SELECT count(*) FROM source_events", [], |r| r.get(0))
            .unwrap();
        assert_eq!(events, 0);
    }
}
