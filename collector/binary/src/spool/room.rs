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
        // auto-vacuum): the checkpoint then writes only the pages in use.
        let _ = self.db.execute_batch("PRAGMA incremental_vacuum");
        let _ = self
            .db
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()));
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
}
