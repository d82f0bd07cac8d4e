//! Room kept free on the spool's filesystem. An ACKed batch is deleted by a transaction, and
//! a transaction needs room for its WAL frames (and a checkpoint for the pages it moves): on
//! a filesystem the reader had filled (ENOSPC), no batch could be deleted, so none could make
//! room, and the collector would hold its spool full for good. So reading pauses while less
//! than `KEPT_FREE` is free there (whoever else fills it), and goes on once a quarter more
//! is. Meanwhile the WAL's file is given back to the filesystem as the sender empties the
//! spool (a checkpoint that truncates it, after an incremental vacuum has cut the free pages
//! off the database's end): SQLite keeps a WAL file as large as it grew, and a checkpoint
//! writes every page the WAL holds, freed ones too; on a small filesystem either alone would
//! keep the room from ever coming back.

use std::path::Path;

/// Free bytes below which reading pauses: many seals' and deletions' worth of WAL.
pub const KEPT_FREE: u64 = 8 * 1024 * 1024;

/// The bytes an unprivileged writer may still take on `directory`'s filesystem (None: it
/// cannot be asked, and nothing pauses on it).
pub fn free_bytes(directory: &Path) -> Option<u64> {
    let found = nix::sys::statvfs::statvfs(directory).ok()?;
    Some(
        found
            .blocks_available()
            .saturating_mul(found.fragment_size()),
    )
}

/// Whether reading may go on: `paused` says whether it paused for room before (it goes on
/// again only at a quarter more, so it does not flap at the bound).
pub fn enough(directory: &Path, paused: bool) -> bool {
    let wanted = if paused {
        KEPT_FREE + KEPT_FREE / 4
    } else {
        KEPT_FREE
    };
    free_bytes(directory).is_none_or(|free| free >= wanted)
}

impl super::Spool {
    /// The WAL's file truncated once its frames are in the database (what the sender deleted
    /// is then free on the filesystem); a checkpoint that cannot finish now is left for later.
    pub fn give_back_room(&mut self) {
        // The free pages moved to the end and cut off first (a spool made with incremental
        // auto-vacuum): the checkpoint then writes only the pages in use. The pragma frees
        // one page per step (a row each), so it is stepped to its end: run once, as
        // `execute_batch` does, it gives back a single page.
        let _ = self.vacuum_free_pages();
        let _ = self
            .db
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()));
    }

    /// Every free page cut off the database's end.
    fn vacuum_free_pages(&self) -> rusqlite::Result<()> {
        let mut vacuum = self.db.prepare("PRAGMA incremental_vacuum")?;
        let mut freed = vacuum.raw_query();
        while freed.next()?.is_some() {}
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_free_room_of_a_directory_is_read() {
        let free = free_bytes(&std::env::temp_dir()).unwrap();
        assert!(free > 0);
        assert_eq!(enough(&std::env::temp_dir(), false), free >= KEPT_FREE);
    }

    #[test]
    fn giving_back_room_frees_every_free_page_at_once() {
        let (directory, mut spool) = crate::spool::scratch("room");
        // A hundred pages' worth of rows, then deleted: a hundred free pages.
        spool
            .db
            .execute_batch(
                "CREATE TABLE scratch (b BLOB); \
                 WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100) \
                 INSERT INTO scratch SELECT randomblob(16000) FROM n; DELETE FROM scratch;",
            )
            .unwrap();
        let free = |spool: &crate::spool::Spool| -> i64 {
            spool
                .db
                .query_row("PRAGMA freelist_count", [], |r| r.get(0))
                .unwrap()
        };
        assert!(free(&spool) >= 100);
        spool.give_back_room();
        assert_eq!(free(&spool), 0);
        let wal = directory.join(format!("{}-wal", crate::spool::FILE));
        assert_eq!(std::fs::metadata(wal).map_or(0, |m| m.len()), 0);
        assert!(
            std::fs::metadata(directory.join(crate::spool::FILE))
                .unwrap()
                .len()
                < 1 << 20
        );
        drop(spool);
        std::fs::remove_dir_all(&directory).unwrap();
    }
}
