//! What a follower watches: each directory, for which names (or any), whether its new
//! subdirectories are watched too, and the bound on how many directories one collector
//! watches.

use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use nix::sys::inotify::{AddWatchFlags, WatchDescriptor};

use super::{MAX_WATCHES, POLL};

/// A directory to watch: for the names given (None: any name), and its new subdirectories
/// too when `recursive`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Watch {
    pub directory: PathBuf,
    pub names: Option<HashSet<OsString>>,
    pub recursive: bool,
}

impl Watch {
    /// Whether an event for `name` in the directory is one of a source's.
    pub fn concerns(&self, name: &OsString) -> bool {
        self.names.as_ref().is_none_or(|names| names.contains(name))
    }
}

#[derive(Default)]
pub(super) struct Watches {
    pub(super) by_descriptor: HashMap<WatchDescriptor, Watch>,
    /// Each watched directory's descriptor (kept by `add`).
    pub(super) directories: HashMap<PathBuf, WatchDescriptor>,
    /// A directory was not watched for `MAX_WATCHES`: sources are polled from then on.
    pub(super) full: bool,
}

impl Watches {
    /// Whether one more directory may be watched; when not, polling takes over (said once).
    pub(super) fn room(&mut self) -> bool {
        if self.directories.len() < MAX_WATCHES {
            return true;
        }
        if !self.full {
            log::warn!("{MAX_WATCHES} directories watched: the rest are polled every {POLL:?}");
            self.full = true;
        }
        false
    }

    /// `want`, for a directory watched already, merged into that directory's watch unless
    /// the watch covers it already (the reader asks again every round).
    pub(super) fn widen(&mut self, want: &Watch) {
        let Some(&descriptor) = self.directories.get(&want.directory) else {
            return;
        };
        let covered = self.by_descriptor.get(&descriptor).is_some_and(|had| {
            (had.recursive || !want.recursive)
                && match (&had.names, &want.names) {
                    (None, _) => true,
                    (Some(_), None) => false,
                    (Some(had), Some(wanted)) => wanted.is_subset(had),
                }
        });
        if !covered {
            add(self, descriptor, want.clone());
        }
    }
}

pub(super) fn mask() -> AddWatchFlags {
    AddWatchFlags::IN_MODIFY
        | AddWatchFlags::IN_CLOSE_WRITE
        | AddWatchFlags::IN_CREATE
        | AddWatchFlags::IN_MOVED_TO
        | AddWatchFlags::IN_MOVED_FROM
        | AddWatchFlags::IN_DELETE
        | AddWatchFlags::IN_ATTRIB
        | AddWatchFlags::IN_ONLYDIR
        | AddWatchFlags::IN_DONT_FOLLOW
}

/// One watch more for the same directory merges names (any name wins).
pub(super) fn add(watches: &mut Watches, descriptor: WatchDescriptor, want: Watch) {
    watches
        .directories
        .insert(want.directory.clone(), descriptor);
    let merged = match watches.by_descriptor.remove(&descriptor) {
        Some(had) => Watch {
            names: match (had.names, want.names) {
                (Some(mut a), Some(b)) => {
                    a.extend(b);
                    Some(a)
                }
                _ => None,
            },
            recursive: had.recursive || want.recursive,
            directory: want.directory,
        },
        None => want,
    };
    watches.by_descriptor.insert(descriptor, merged);
}

/// What to watch for `path`, a source of one file (its directory, for its name) or a log
/// directory (it and the directories of its event files, for any name).
pub fn watches_of(path: &Path, log_directory: bool, files: &[PathBuf]) -> Vec<Watch> {
    // A log directory given as one event file is that file's.
    if !log_directory || files.iter().any(|file| file == path) {
        let (Some(directory), Some(name)) = (path.parent(), path.file_name()) else {
            return Vec::new();
        };
        return vec![Watch {
            directory: directory.to_path_buf(),
            names: Some(HashSet::from([name.to_os_string()])),
            recursive: false,
        }];
    }
    let mut directories: Vec<PathBuf> = vec![path.to_path_buf()];
    for file in files {
        if let Some(parent) = file.parent().filter(|p| *p != path) {
            if !directories.iter().any(|d| d == parent) {
                directories.push(parent.to_path_buf());
            }
        }
    }
    directories
        .into_iter()
        .map(|directory| Watch {
            directory,
            names: None,
            recursive: true,
        })
        .collect()
}
