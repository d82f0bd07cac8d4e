//! Places a source is never read from, however its path resolves.
//!
//! A training command owns its working directory: at any moment it can replace a source
//! file with a symbolic link into the node agent's state directory (the node credential,
//! workload tokens) or the spool. The collector reads with more rights than the training
//! command, so every source file is opened first and the file actually opened is then
//! checked (its path as the kernel names it, `/proc/self/fd/N`): no check-then-open race.
//! Only regular files are read (a FIFO or a device would block or never end).

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::collect::opener::{Opener, FLAGS};

/// Why a source file was not opened.
#[derive(Debug)]
pub enum Refusal {
    /// Not there (yet, or any more): as if not written yet.
    Gone,
    /// May not or cannot be read; the message says which.
    Refused(String),
}

/// Directories (resolved) no source may be read from, and whose rights open the sources.
#[derive(Default, Clone)]
pub struct Fence {
    forbidden: Vec<PathBuf>,
    /// The same directories as given (not resolved).
    given: Vec<PathBuf>,
    opener: Option<Arc<Opener>>,
}

impl Fence {
    pub fn of(directories: &[PathBuf]) -> Self {
        Self {
            forbidden: directories
                .iter()
                .map(|d| fs::canonicalize(d).unwrap_or_else(|_| d.clone()))
                .collect(),
            given: directories.to_vec(),
            opener: None,
        }
    }

    /// A file the launcher names by a path inside a fenced directory (its own: the node
    /// agent's launch directory, say) is read as the regular file it must be; any other
    /// path is `open`'s, so one that reaches a fenced directory through a link is refused.
    pub fn open_named(&self, path: &Path) -> Result<File, Refusal> {
        let named = self
            .given
            .iter()
            .chain(&self.forbidden)
            .any(|d| path.starts_with(d) && !path.components().any(|c| c.as_os_str() == ".."));
        if named {
            return Fence::default().open(path);
        }
        self.open(path)
    }

    /// The same fence, its files opened by `opener` (the training user's rights).
    pub fn opened_by(self, opener: Arc<Opener>) -> Self {
        Self {
            opener: Some(opener),
            ..self
        }
    }

    fn open_file(&self, path: &Path) -> Result<File, Refusal> {
        if let Some(opener) = &self.opener {
            return opener.open(path);
        }
        OpenOptions::new()
            .read(true)
            .custom_flags(FLAGS)
            .open(path)
            .map_err(|e| match e.kind() {
                io::ErrorKind::NotFound => Refusal::Gone,
                _ => Refusal::Refused(format!(
                    "{} cannot be opened: {}",
                    path.display(),
                    plain(&e)
                )),
            })
    }

    /// `path` opened for reading, once the file opened is known to be allowed.
    pub fn open(&self, path: &Path) -> Result<File, Refusal> {
        let file = self.open_file(path)?;
        let fd = file.as_raw_fd();
        let opened = fs::read_link(format!("/proc/self/fd/{fd}"))
            .map_err(|e| Refusal::Refused(format!("{}: {}", path.display(), plain(&e))))?;
        if let Some(directory) = self.forbidden.iter().find(|d| opened.starts_with(d)) {
            return Err(Refusal::Refused(format!(
                "{} is {}, inside {}, which sources are never read from",
                path.display(),
                opened.display(),
                directory.display()
            )));
        }
        let meta = file.metadata().map_err(|e| Refusal::Refused(plain(&e)))?;
        if !meta.is_file() {
            return Err(Refusal::Refused(format!(
                "{} is not a regular file",
                path.display()
            )));
        }
        // SAFETY: fcntl on a descriptor this function owns, with plain integer flags.
        unsafe {
            let flags = libc::fcntl(fd, libc::F_GETFL);
            libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK);
        }
        Ok(file)
    }
}

/// An I/O error as a person reads it: "Permission denied", not "... (os error 13)".
pub fn plain(error: &io::Error) -> String {
    let text = error.to_string();
    match text.find(" (os error") {
        Some(at) => text[..at].to_owned(),
        None => text,
    }
}

/// "`what` `path`: `error`", for a file that could not be used.
pub fn failed(what: &str, path: &Path, error: &io::Error) -> String {
    format!("{what} {}: {}", path.display(), plain(error))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_into_a_fenced_directory_is_refused_after_opening() {
        let base = std::env::temp_dir().join(format!("fence-{}", std::process::id()));
        let (secret, work) = (base.join("state"), base.join("work"));
        fs::create_dir_all(&secret).unwrap();
        fs::create_dir_all(&work).unwrap();
        fs::write(secret.join("token"), b"secret").unwrap();
        std::os::unix::fs::symlink(secret.join("token"), work.join("m.jsonl")).unwrap();
        fs::write(work.join("ok.jsonl"), b"{}\n").unwrap();
        let fence = Fence::of(std::slice::from_ref(&secret));
        match fence.open(&work.join("m.jsonl")) {
            Err(Refusal::Refused(why)) => assert!(why.contains("never read from"), "{why}"),
            other => panic!("not refused: {other:?}"),
        }
        assert!(fence.open(&work.join("ok.jsonl")).is_ok());
        assert!(matches!(fence.open(&work.join("none")), Err(Refusal::Gone)));
        assert!(matches!(fence.open(&work), Err(Refusal::Refused(_))));
        // Named inside the fence by its launcher, a file is read; reached through a link
        // (or a path climbing out and back in), it is not.
        assert!(fence.open_named(&secret.join("token")).is_ok());
        assert!(matches!(
            fence.open_named(&work.join("m.jsonl")),
            Err(Refusal::Refused(_))
        ));
        let climbing = secret.join("..").join("state").join("token");
        assert!(matches!(
            fence.open_named(&climbing),
            Err(Refusal::Refused(_))
        ));
        fs::remove_dir_all(&base).unwrap();
    }
}
