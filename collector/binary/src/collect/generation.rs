//! Which file, and which generation of it, a step reads: a source path is one file at a
//! time, but a job or a rotation may truncate it in place (copytruncate), write it anew, or
//! rename it away and put a new file there.
//!
//! A file is known by its device and inode; its generation by a fingerprint of its first
//! bytes (up to `FINGERPRINT_BYTES`, CRC-32C, as Fluent Bit and Vector fingerprint files).
//! A file shorter than its read offset, or whose first bytes are no longer the ones read,
//! is a new generation, read from its start. An earlier file renamed away or deleted is
//! finished through the descriptor held open on it (`Held`), then the new one is read.

use std::fs::{File, Metadata};
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use crate::spool::SavedPosition;

/// How many of a file's first bytes tell one generation of it from another.
pub const FINGERPRINT_BYTES: u64 = 1024;

/// Files one reader keeps open between steps at most (a log directory may hold many; each
/// is opened again by its path once let go).
pub const HELD_FILES: usize = 128;

/// Descriptors a process keeps free of held files: for the spool, the sockets to ingest,
/// the opener's helper, inotify, and the files being read.
const RESERVED_FILES: u64 = 256;

/// Files held by every reader of this process (a Slurm node's collector runs one reader
/// per member), and how many the process may hold in all: half of what its descriptor
/// limit leaves past `RESERVED_FILES`.
static HELD_NOW: AtomicUsize = AtomicUsize::new(0);

pub fn held_budget() -> usize {
    static BUDGET: OnceLock<usize> = OnceLock::new();
    *BUDGET.get_or_init(|| {
        let limit = raise_open_files();
        usize::try_from(limit.saturating_sub(RESERVED_FILES) / 2).unwrap_or(usize::MAX)
    })
}

/// The soft limit of open descriptors raised to the hard one (a training host's 1024 is
/// often far below what it allows), and what it is now.
fn raise_open_files() -> u64 {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    match getrlimit(Resource::RLIMIT_NOFILE) {
        Ok((soft, hard)) if soft < hard => {
            if setrlimit(Resource::RLIMIT_NOFILE, hard, hard).is_ok() {
                hard
            } else {
                soft
            }
        }
        Ok((soft, _)) => soft,
        Err(_) => 1024,
    }
}

/// Whether every reader together holds as many files as the process may.
pub fn held_full() -> bool {
    HELD_NOW.load(Ordering::Relaxed) >= held_budget()
}

/// The identity of the file a path names now.
pub fn key_of(meta: &Metadata) -> String {
    format!("{}:{}", meta.dev(), meta.ino())
}

/// A file held open from one step to the next: read to its end through this descriptor
/// even once its path names another file, or none.
#[derive(Debug)]
pub struct Held {
    pub key: String,
    pub file: File,
    /// The step that last read it (the least recent is let go first).
    pub used: u64,
}

/// One more file held, or one fewer (`SourceReader::hold` and `let_go` keep the count).
pub fn count_held(more: bool) {
    if more {
        HELD_NOW.fetch_add(1, Ordering::Relaxed);
    } else {
        HELD_NOW.fetch_sub(1, Ordering::Relaxed);
    }
}

/// `<bytes>:<crc32c>` of the file's first `min(upto, FINGERPRINT_BYTES)` bytes ("" for none).
pub fn fingerprint(file: &File, upto: u64) -> io::Result<String> {
    let wanted = usize::try_from(upto.min(FINGERPRINT_BYTES)).unwrap_or(0);
    if wanted == 0 {
        return Ok(String::new());
    }
    let mut bytes = vec![0u8; wanted];
    let mut got = 0;
    while got < wanted {
        match file.read_at(&mut bytes[got..], got as u64)? {
            0 => break,
            n => got += n,
        }
    }
    Ok(format!("{got}:{:08x}", crc32c::crc32c(&bytes[..got])))
}

/// What became of the file a position was saved for, seen through its descriptor.
#[derive(Debug, PartialEq, Eq)]
pub enum Change {
    /// The same bytes, perhaps more: reading goes on from the saved offset.
    Same,
    /// Shorter than the offset read to: truncated (copytruncate), a new generation.
    Truncated,
    /// Its first bytes are other bytes: written anew in place, a new generation.
    Rewritten,
}

pub fn change(file: &File, length: u64, saved: &SavedPosition) -> io::Result<Change> {
    if length < saved.offset {
        return Ok(Change::Truncated);
    }
    match covered(&saved.fingerprint) {
        Some(bytes) if fingerprint(file, bytes)? != saved.fingerprint => Ok(Change::Rewritten),
        _ => Ok(Change::Same), // none taken yet (a spool of before): nothing to compare
    }
}

/// How many first bytes a fingerprint covers (None: none taken, as in a spool of before).
pub fn covered(fingerprint: &str) -> Option<u64> {
    fingerprint
        .split_once(':')
        .and_then(|(bytes, _)| bytes.parse::<u64>().ok())
}

/// The position a new generation of the file is read from: its start.
pub fn next_generation(saved: &SavedPosition, key: &str) -> SavedPosition {
    SavedPosition {
        file_key: key.to_owned(),
        offset: 0,
        line: 1,
        state: String::new(),
        fingerprint: String::new(),
        generation: saved.generation + 1,
    }
}

/// The fingerprint to save with a position at `offset`: the saved one while it covers all
/// it can, else taken again.
pub fn fingerprint_at(file: &File, offset: u64, saved: &str) -> io::Result<String> {
    if covered(saved).is_some_and(|bytes| bytes >= FINGERPRINT_BYTES.min(offset)) {
        return Ok(saved.to_owned());
    }
    fingerprint(file, offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file holding `bytes`, already unlinked: the descriptor is all there is of it.
    fn file_with(bytes: &[u8]) -> ((), File) {
        let mut random = [0u8; 8];
        getrandom::fill(&mut random).unwrap();
        let path =
            std::env::temp_dir().join(format!("tp-generation-{:016x}", u64::from_le_bytes(random)));
        std::fs::write(&path, bytes).unwrap();
        let file = File::open(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        ((), file)
    }

    fn saved(offset: u64, fingerprint: String) -> SavedPosition {
        SavedPosition {
            file_key: "1:2".into(),
            offset,
            line: 1,
            state: String::new(),
            fingerprint,
            generation: 1,
        }
    }

    #[test]
    fn a_file_grown_is_the_same_one_truncated_or_rewritten_is_a_new_generation() {
        let (_named, file) = file_with(b"{\"step\": 1}\n{\"step\": 2}\n");
        let print = fingerprint(&file, 12).unwrap();
        assert_eq!(
            change(&file, 24, &saved(12, print.clone())).unwrap(),
            Change::Same
        );
        assert_eq!(
            change(&file, 24, &saved(30, print)).unwrap(),
            Change::Truncated
        );
        let (_other, rewritten) = file_with(b"{\"step\": 9}\n{\"step\": 2}\n");
        let print = fingerprint(&file, 12).unwrap();
        assert_eq!(
            change(&rewritten, 24, &saved(12, print)).unwrap(),
            Change::Rewritten
        );
        assert_eq!(
            change(&file, 24, &saved(12, String::new())).unwrap(),
            Change::Same
        );
    }

    #[test]
    fn a_fingerprint_covers_the_first_bytes_read_and_no_more() {
        let (_named, file) = file_with(&vec![7u8; 4096]);
        assert_eq!(fingerprint(&file, 0).unwrap(), "");
        assert!(fingerprint(&file, 10).unwrap().starts_with("10:"));
        assert!(fingerprint(&file, 5000).unwrap().starts_with("1024:"));
        let full = fingerprint(&file, 2048).unwrap();
        assert_eq!(fingerprint_at(&file, 3000, &full).unwrap(), full);
        assert!(fingerprint_at(&file, 100, "10:0")
            .unwrap()
            .starts_with("100:"));
    }

    #[test]
    fn a_new_generation_starts_at_the_beginning_and_counts_up() {
        let next = next_generation(&saved(500, "12:abc".into()), "1:3");
        assert_eq!((next.offset, next.line, next.generation), (0, 1, 2));
        assert_eq!(
            (next.file_key.as_str(), next.fingerprint.as_str()),
            ("1:3", "")
        );
    }
}
