//! Which file a step reads, and from where: the earlier file a path named, held open and
//! not read to its end, is finished first through its descriptor (renamed away or deleted);
//! else the file the path names now. A file truncated or written anew in place, or another
//! file at the path, is a new generation read from its start (`generation`). Each such
//! event moves the saved position and is recorded with it (`spool status`), so it is
//! logged once.

use std::fs::File;
use std::io::ErrorKind;
use std::path::Path;

use super::generation::{self, key_of, Change};
use super::reader::{now, SourceReader};
use super::unfinished::rotated;
use super::SourceSpec;
use crate::collect::draft::BatchDraft;
use crate::collect::fence::{plain, Refusal};
use crate::sources::names::escape_controls;
use crate::spool::SavedPosition;

/// The file a step reads, its identity, where reading it starts and its length now.
pub struct Chosen {
    pub file: File,
    pub key: String,
    pub start: SavedPosition,
    pub length: u64,
    /// An earlier file the path no longer names, being finished: once it is read to its
    /// end, the next step (at once, not at the next change) turns to what the path names.
    pub finishing: bool,
}

type Choice = rusqlite::Result<Option<Chosen>>;

/// How far an earlier file was read: to its end, or to `offset` when the rest was given up
/// (`unfinished`), and why.
fn read_to(offset: u64, length: u64, given_up: Option<&str>) -> String {
    match given_up.filter(|_| offset < length) {
        Some(why) => {
            let rest = length.saturating_sub(offset);
            format!("to byte {offset}, all but its last {rest} bytes, left unread: {why}")
        }
        None => format!("to its end ({offset} bytes)"),
    }
}

/// The first generation of a file never read before.
fn first(key: &str) -> SavedPosition {
    generation::next_generation(&SavedPosition::default(), key)
}

impl SourceReader {
    /// The file to read for `relative` of `source` (at `path`), given its `saved` position;
    /// None: nothing to read now.
    pub(super) fn choose(
        &mut self,
        source: &SourceSpec,
        path: &Path,
        relative: &str,
        saved: Option<SavedPosition>,
    ) -> Choice {
        let name = (source.id.clone(), relative.to_owned());
        // Only "no such file" means the path names none now; any other error (a symbolic
        // link loop, an I/O error, no permission for a while) is passed over, the file held.
        let at_path = match std::fs::metadata(path) {
            Ok(meta) => Some(meta),
            Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => None,
            Err(e) => {
                let said = format!("source {}: {}: {}", source.id, path.display(), plain(&e));
                self.report_once(path, &said, "stat");
                return Ok(None);
            }
        };
        let mut held_file = None;
        // The earlier file was read to its end, this many bytes (and how it ended).
        let mut finished = None;
        let mut finishing = false;
        if let Some(held) = self.let_go(&name) {
            let moved = at_path.as_ref().is_none_or(|m| key_of(m) != held.key);
            match &saved {
                Some(s) if moved && s.file_key == held.key => {
                    let length = held.file.metadata().map_or(0, |m| m.len());
                    let given_up = self.unfinished.given_up(&name, &held.key, length);
                    if length > s.offset && given_up.is_none() {
                        held_file = Some((held.file, held.key));
                        finishing = true;
                    } else if given_up.is_none()
                        && !self.unfinished.seen(&name, &held.key, length, rotated())
                    {
                        // Read to its end, but its writer may append to it still, until it
                        // opens the path again (logrotate's `create`): waited for.
                        self.hold(name, held.key, held.file);
                        return Ok(None);
                    } else if at_path.is_none() {
                        let said = format!(
                            "{}: deleted; it was read {} through its open descriptor",
                            path.display(),
                            read_to(s.offset, length, given_up.as_deref())
                        );
                        let gone = generation::next_generation(s, "");
                        self.restart(source, relative, &gone, "deleted", &said)?;
                        return Ok(None);
                    } else {
                        finished = Some(read_to(s.offset, length, given_up.as_deref()));
                    }
                }
                // The same file, as long as read: passed over (one fstat, no fingerprint).
                Some(s)
                    if !moved
                        && s.file_key == held.key
                        && held.file.metadata().is_ok_and(|m| m.len() == s.offset) =>
                {
                    self.hold(name, held.key, held.file);
                    return Ok(None);
                }
                _ if !moved => held_file = Some((held.file, held.key)),
                _ => {}
            }
        }
        let (file, key) = match held_file {
            Some(found) => found,
            None => match self.open(source, path, at_path.as_ref(), saved.as_ref()) {
                Some(opened) => opened,
                None => return Ok(None),
            },
        };
        let Ok(meta) = file.metadata() else {
            return Ok(None);
        };
        let start = match saved {
            None => first(&key),
            Some(saved) if saved.file_key == key => {
                match generation::change(&file, meta.len(), &saved) {
                    Ok(Change::Same) => saved,
                    Ok(change) => {
                        let next = generation::next_generation(&saved, &key);
                        let (what, how) = if change == Change::Truncated {
                            let how = format!(
                                "truncated below the offset read to ({} bytes, now {})",
                                saved.offset,
                                meta.len()
                            );
                            ("truncated", how)
                        } else {
                            (
                                "rewritten",
                                "written anew in place (its first bytes changed)".into(),
                            )
                        };
                        let said = format!(
                            "{}: {how}; generation {} read from its start",
                            path.display(),
                            next.generation
                        );
                        self.restart(source, relative, &next, what, &said)?;
                        next
                    }
                    Err(e) => {
                        let said =
                            format!("source {}: {}: {}", source.id, path.display(), plain(&e));
                        self.report_once(path, &said, &key);
                        self.hold(name, key, file);
                        return Ok(None);
                    }
                }
            }
            Some(saved) => {
                let next = generation::next_generation(&saved, &key);
                let (what, how) = match finished {
                    _ if saved.file_key.is_empty() => {
                        ("created", "created again after it was deleted".to_owned())
                    }
                    Some(read) => (
                        "replaced",
                        format!(
                            "replaced by another file; the one before was read {read} through \
                             its open descriptor"
                        ),
                    ),
                    // The file read before was not held (the collector started since): what
                    // it held past the offset read to is in no file this collector reaches.
                    None => (
                        "replaced",
                        format!(
                            "replaced by another file; the one before was read to offset {} \
                             and is no longer there to finish",
                            saved.offset
                        ),
                    ),
                };
                let said = format!(
                    "{}: {how}; generation {} read from its start",
                    path.display(),
                    next.generation
                );
                self.restart(source, relative, &next, what, &said)?;
                next
            }
        };
        Ok(Some(Chosen {
            file,
            key,
            start,
            length: meta.len(),
            finishing,
        }))
    }

    /// The file `path` names now, opened as the source is read (the fence, the training
    /// user's rights); None when it is not there, unchanged since read, or refused.
    fn open(
        &mut self,
        source: &SourceSpec,
        path: &Path,
        at_path: Option<&std::fs::Metadata>,
        saved: Option<&SavedPosition>,
    ) -> Option<(File, String)> {
        // A first look by path (as the collector): an unchanged file is passed over unopened.
        let hint = at_path?; // not written yet
        if saved.is_some_and(|s| s.file_key == key_of(hint) && s.offset == hint.len()) {
            return None;
        }
        self.make_room(); // a held file let go first when the process holds all it may
        let file = match self.fence.open(path) {
            Ok(file) => file,
            Err(Refusal::Gone) => return None,
            Err(Refusal::Refused(why)) => {
                let said = format!("source {}: refused: {why}", source.id);
                self.report_once(path, &said, &key_of(hint));
                return None;
            }
        };
        // The file opened decides, by its descriptor: the path may name another file by now,
        // or (opened as the training user) resolve to another than the collector's look saw.
        let key = key_of(&file.metadata().ok()?);
        Some((file, key))
    }

    /// A new generation of a file (or a new file at its path, or none) begins: its position
    /// is reset to its start and the event (`what`, and what it says) recorded in one
    /// transaction, and logged (once: the position moved, the next step sees no change).
    fn restart(
        &mut self,
        source: &SourceSpec,
        relative: &str,
        next: &SavedPosition,
        what: &str,
        said: &str,
    ) -> rusqlite::Result<()> {
        let mut draft = BatchDraft::new(&source.id, "");
        let times = {
            let mut spool = self.spool.get();
            spool.seal(&mut draft, relative, next, now(), &[], Some((what, said)))?;
            spool.event_times
        };
        // A file a job truncates or rewrites again and again is said at the 1st, 2nd, 4th,
        // 8th ... time, and counted in `spool status` every time.
        if times.is_power_of_two() {
            let again = if times > 1 {
                format!(" (the {times}th time)")
            } else {
                String::new()
            };
            log::warn!("source {}: {}{again}", source.id, escape_controls(said));
        }
        Ok(())
    }
}
