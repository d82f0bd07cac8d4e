//! The host-local SQLite spool: sealed batches and the source positions they advance.
//!
//! Sealing a batch and advancing its source's position happen in one transaction (WAL,
//! `synchronous=FULL`), so after any crash a point is either in a sealed batch or still
//! ahead of the saved position: never both, never neither. A batch keeps its identity and
//! bytes until an ACK deletes it. The schema is the one every collector of the project has
//! written, so a spool outlives the collector that began it.

pub mod lock;
pub mod manifest;
pub mod mounts;
pub mod place;
mod queue;
mod resume;
pub mod room;
mod schema;
mod seal;
pub mod status;

use std::collections::HashMap;
use std::fmt;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use rusqlite::{params, Connection, OptionalExtension};

pub use queue::Holding;
pub use resume::{Adopted, Resume, Settled};

pub const FILE: &str = "spool.sqlite3";

/// The page size of a new spool (an existing one keeps its own). A batch of 10,000 points
/// is about 200 KB: in 16 KiB pages, its seal writes a dozen WAL frames and its deletion walks
/// a dozen overflow pages, not sixty of SQLite's default 4 KiB.
const PAGE_SIZE: u32 = 16_384;

/// run/attempt/member: the one process identity a spool belongs to.
#[derive(Debug, Clone, PartialEq)]
pub struct MemberKey {
    pub run_id: String,
    pub attempt: u32,
    pub member: String,
}

impl fmt::Display for MemberKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}/{}", self.run_id, self.attempt, self.member)
    }
}

/// The spool cannot be used as configured; the message says why.
#[derive(Debug)]
pub struct SpoolError(pub String);

impl fmt::Display for SpoolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Where reading a file resumes, and what the reader must remember about it (JSON).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SavedPosition {
    pub file_key: String,
    pub offset: u64,
    pub line: u64,
    pub state: String,
    /// What the file's first bytes were when read (`collect::generation`): other bytes
    /// there mean the file was written anew in place.
    pub fingerprint: String,
    /// How many times the file was found truncated or written anew, plus one.
    pub generation: u64,
}

#[derive(Debug)]
pub struct SealedBatch {
    pub sequence: u64,
    /// The sealed bytes, sent as they are (a view, not copied per try).
    pub payload: prost::bytes::Bytes,
    pub points: u64,
}

pub struct Spool {
    pub(super) db: Connection,
    /// Where it is (its filesystem's free room is looked at: `room`).
    pub directory: std::path::PathBuf,
    owner: MemberKey,
    pub epoch: String,
    /// The last batch's encoding, its allocation kept for the next (up to KEPT_BYTES): a
    /// follower seals a batch a second, and a fresh buffer each time is pages mapped,
    /// faulted in and unmapped each time.
    encoded: Vec<u8>,
    /// Payload buffers of batches sent, for the next read (the sender's connection).
    payloads: Vec<Vec<u8>>,
    /// Whether commits wait for the disk (`synchronous=FULL`) as they are set now.
    durable: bool,
    /// How many times the last event sealed has happened to its file (1: the first).
    pub event_times: u64,
    /// Each file's generation row as this collector last wrote it: a seal that moves only
    /// the offset writes no second row (a follower seals a batch a second).
    generations: HashMap<(String, String), (String, String, u64)>,
}

/// A spool's one connection, shared by a collector's reader and sender. A connection keeps
/// its pages cached from one transaction to the next only while no other connection writes
/// the database: two would each read back, into pages allocated anew, every page the other
/// had touched, every round.
#[derive(Clone)]
pub struct Shared(Arc<Mutex<Spool>>);

impl Shared {
    pub fn new(spool: Spool) -> Self {
        Self(Arc::new(Mutex::new(spool)))
    }

    /// The spool, for one operation: held only while it runs, never across a call to ingest.
    /// A lock poisoned by a thread's panic is taken as it is (every change is a transaction).
    pub fn get(&self) -> MutexGuard<'_, Spool> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The most of an encoding buffer kept between seals.
const KEPT_BYTES: usize = 1 << 20;

fn damaged(path: &Path, error: &rusqlite::Error) -> SpoolError {
    SpoolError(format!(
        "spool database {} is damaged ({error}). It is kept as it is: move the spool \
         directory aside to start a new spool epoch, or recover it",
        path.display()
    ))
}

/// Where reading the file goes on (its row of `positions`).
fn save_position(
    db: &Connection,
    (source, file): (&str, &str),
    p: &SavedPosition,
) -> rusqlite::Result<()> {
    db.prepare_cached(
        "INSERT INTO positions VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (source, file) DO \
         UPDATE SET file_key = excluded.file_key, offset = excluded.offset, \
         line = excluded.line, state = excluded.state",
    )?
    .execute(params![source, file, p.file_key, p.offset, p.line, p.state])?;
    Ok(())
}

/// Which file and generation the position is in (its row of `generations`).
fn save_generation(
    db: &Connection,
    (source, file): (&str, &str),
    p: &SavedPosition,
) -> rusqlite::Result<()> {
    db.prepare_cached(
        "INSERT INTO generations VALUES (?, ?, ?, ?, ?) ON CONFLICT (source, file) DO \
         UPDATE SET file_key = excluded.file_key, fingerprint = excluded.fingerprint, \
         generation = excluded.generation",
    )?
    .execute(params![
        source,
        file,
        p.file_key,
        p.fingerprint,
        p.generation
    ])?;
    Ok(())
}

/// One more time `event` happened to the file, said `detail` (`spool status`); returns
/// the times it has happened.
fn record_event(
    db: &Connection,
    (source, file): (&str, &str),
    (event, detail): (&str, &str),
    at: f64,
) -> rusqlite::Result<u64> {
    db.prepare_cached(
        "INSERT INTO source_events VALUES (?, ?, ?, 1, ?, ?, ?) ON CONFLICT (source, file, \
         event) DO UPDATE SET count = count + 1, last_at = excluded.last_at, \
         detail = excluded.detail RETURNING count",
    )?
    .query_row(params![source, file, event, at, at, detail], |r| r.get(0))
}

impl Spool {
    /// The generation row of a file is written again at its next seal.
    fn forget_generation(&mut self, source: &str, file: &str) {
        self.generations
            .remove(&(source.to_owned(), file.to_owned()));
    }

    /// The member's spool in `directory` (made private, refused on a network filesystem),
    /// created with a new epoch when it is new. `mountinfo` is the mount table to judge by.
    pub fn open(directory: &Path, owner: &MemberKey, mountinfo: &str) -> Result<Self, SpoolError> {
        place::prepare(directory, mountinfo)?;
        let path = directory.join(FILE);
        let open = || -> rusqlite::Result<(Connection, String, String)> {
            let db = Connection::open(&path)?;
            db.busy_timeout(std::time::Duration::from_secs(30))?;
            db.pragma_update(None, "page_size", PAGE_SIZE)?;
            // A new spool's free pages can be given back to the filesystem (`room`); an
            // existing one keeps its mode (it changes only before the first table).
            db.pragma_update(None, "auto_vacuum", "INCREMENTAL")?;
            db.pragma_update(None, "journal_mode", "WAL")?;
            db.pragma_update(None, "synchronous", "FULL")?;
            // The tables and the owner at once: `spool status` of a spool being created
            // sees none of them or all.
            db.execute_batch("BEGIN IMMEDIATE")?;
            schema::migrate(&db)?;
            db.execute_batch(schema::SCHEMA)?;
            let (epoch, holder) = Self::load_meta(&db, owner)?;
            db.execute_batch("COMMIT")?;
            Ok((db, epoch, holder))
        };
        let (db, epoch, holder) = open().map_err(|e| damaged(&path, &e))?;
        let _ = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600));
        if holder != owner.to_string() {
            return Err(SpoolError(format!(
                "spool {} belongs to {holder}, not {owner}; give each member its own spool \
                 directory",
                path.display()
            )));
        }
        Ok(Self {
            db,
            directory: directory.to_path_buf(),
            owner: owner.clone(),
            epoch,
            encoded: Vec::new(),
            payloads: Vec::new(),
            durable: true,
            event_times: 0,
            generations: HashMap::new(),
        })
    }

    /// (epoch, owner) of the spool; a new spool is a new epoch, whose batch ids never
    /// collide with a lost spool's. In the caller's transaction.
    fn load_meta(db: &Connection, owner: &MemberKey) -> rusqlite::Result<(String, String)> {
        let meta = |key: &str| -> rusqlite::Result<Option<String>> {
            db.query_row("SELECT value FROM meta WHERE key = ?", [key], |r| r.get(0))
                .optional()
        };
        let found = (meta("epoch")?, meta("owner")?);
        let result = if let (Some(epoch), Some(holder)) = found {
            (epoch, holder)
        } else {
            let mut random = [0u8; 8];
            getrandom::fill(&mut random).map_err(|e| {
                rusqlite::Error::ToSqlConversionFailure(Box::new(std::io::Error::other(
                    e.to_string(),
                )))
            })?;
            let epoch: String = random.iter().map(|b| format!("{b:02x}")).collect();
            for (key, value) in [
                ("epoch", epoch.as_str()),
                ("next_sequence", "1"),
                ("owner", &owner.to_string()),
                resume::PENDING,
            ] {
                db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", [key, value])?;
            }
            (epoch, owner.to_string())
        };
        Ok(result)
    }

    pub fn position(&self, source: &str, file: &str) -> rusqlite::Result<Option<SavedPosition>> {
        self.db
            .prepare_cached(
                "SELECT p.file_key, p.offset, p.line, p.state, g.file_key, g.fingerprint, \
                 g.generation FROM positions p LEFT JOIN generations g USING (source, file) \
                 WHERE p.source = ? AND p.file = ?",
            )?
            .query_row([source, file], |r| {
                let file_key: String = r.get(0)?;
                // A fingerprint is of the file it was taken of: a collector of before may
                // have moved the position on to another file since.
                let printed: Option<String> = r.get(4)?;
                let fingerprint: Option<String> = r.get(5)?;
                Ok(SavedPosition {
                    offset: r.get(1)?,
                    line: r.get(2)?,
                    state: r.get(3)?,
                    fingerprint: fingerprint
                        .filter(|_| printed.as_deref() == Some(file_key.as_str()))
                        .unwrap_or_default(),
                    generation: r.get::<_, Option<u64>>(6)?.unwrap_or(1),
                    file_key,
                })
            })
            .optional()
    }

    /// Sets whether the next commits wait for the disk. A seal's must: a batch is sent only
    /// once it is durable, and a point is in a sealed batch or ahead of its source's saved
    /// position after any crash. The sender's need not (`queue`); a seal's sync makes every
    /// frame of the WAL before it durable too.
    fn synchronous(&mut self, durable: bool) -> rusqlite::Result<()> {
        if self.durable != durable {
            let mode = if durable { "FULL" } else { "NORMAL" };
            self.db.pragma_update(None, "synchronous", mode)?;
            self.durable = durable;
        }
        Ok(())
    }
}

/// A new spool for a unit test, in a temporary directory of its own (`name` and the process
/// name it; one left by an earlier run is removed first), owned by run-1/1/rank-0 on a local
/// filesystem. The test removes the directory.
#[cfg(test)]
pub fn scratch(name: &str) -> (std::path::PathBuf, Spool) {
    let directory = std::env::temp_dir().join(format!("tp-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&directory);
    let spool = Spool::open(&directory, &scratch_owner(), SCRATCH_MOUNTS).expect("a scratch spool");
    (directory, spool)
}

/// The owner of a `scratch` spool (to open it again).
#[cfg(test)]
pub fn scratch_owner() -> MemberKey {
    MemberKey {
        run_id: "run-1".into(),
        attempt: 1,
        member: "rank-0".into(),
    }
}

/// A mount table of one local filesystem, where a `scratch` spool is.
#[cfg(test)]
pub const SCRATCH_MOUNTS: &str = "1 0 8:1 / / rw - ext4 /dev/sda1 rw\n";
