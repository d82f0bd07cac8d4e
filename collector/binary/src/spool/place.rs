//! The spool's place: private to the collector user, durable and on a host-local
//! filesystem.
//!
//! Network and cluster filesystems are refused with an error naming the filesystem: their
//! locking and fsync semantics do not keep SQLite's promises, and a spool shared between
//! hosts would mix members. There is never a fallback to another directory. A member's
//! spool below a root is `<root>/<run>/<attempt>/<member>`, each part a name, checked to
//! stay inside the root before anything is created.

use std::fs::{self, DirBuilder};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::mounts::check_filesystem;
use super::{MemberKey, SpoolError};
use crate::sources::names::{is_identifier, NAME_RULE};
use crate::sources::repr::py_str;

/// Creates `directory` (and missing parents) 0700, or checks an existing one is private.
pub fn make_private(directory: &Path, what: &str) -> Result<(), SpoolError> {
    let said = |e: std::io::Error| SpoolError(format!("{what} {}: {e}", directory.display()));
    let mut missing = Vec::new();
    // Absolute, so that a relative directory's parents end at the working directory's.
    let mut path = std::path::absolute(directory).map_err(said)?;
    while !path.exists() {
        missing.push(path.clone());
        if !path.pop() {
            break;
        }
    }
    for path in missing.iter().rev() {
        match DirBuilder::new().mode(0o700).create(path) {
            Ok(()) => fs::set_permissions(path, fs::Permissions::from_mode(0o700)).map_err(said)?,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(said(e)),
        }
    }
    let info = fs::metadata(directory).map_err(said)?;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let euid = unsafe { libc::geteuid() };
    if !info.is_dir() {
        return Err(SpoolError(format!(
            "{what} {} is not a directory",
            directory.display()
        )));
    }
    if info.uid() != euid {
        return Err(SpoolError(format!(
            "{what} {} is owned by uid {}, not by the collector's uid {euid}",
            directory.display(),
            info.uid()
        )));
    }
    if info.mode() & 0o077 != 0 {
        return Err(SpoolError(format!(
            "{what} {} is mode {:04o}; it must be 0700 (private to the collector user)",
            directory.display(),
            info.mode() & 0o7777
        )));
    }
    Ok(())
}

/// Refuses a network filesystem first (nothing is created there), then makes it private.
pub fn prepare(directory: &Path, mountinfo: &str) -> Result<(), SpoolError> {
    check_filesystem(directory, mountinfo)?;
    make_private(directory, "spool directory")
}

/// `<root>/<run>/<attempt>/<member>`, refused unless it stays inside `root`.
pub fn member_dir(root: &Path, owner: &MemberKey) -> Result<PathBuf, SpoolError> {
    for (what, part) in [("run", &owner.run_id), ("member", &owner.member)] {
        if !is_identifier(part) {
            return Err(SpoolError(format!(
                "{what} {} cannot name a spool directory below {}: a name is {NAME_RULE}",
                py_str(part),
                root.display()
            )));
        }
    }
    if owner.attempt < 1 {
        return Err(SpoolError(format!(
            "attempt {} cannot name a spool directory",
            owner.attempt
        )));
    }
    let mut path = root.to_path_buf();
    for part in [
        owner.run_id.clone(),
        owner.attempt.to_string(),
        owner.member.clone(),
    ] {
        path.push(part);
        if path.is_symlink() {
            let to = fs::read_link(&path).unwrap_or_default();
            return Err(SpoolError(format!(
                "spool directory {}: {} is a symbolic link to {}; a spool stays inside {}",
                root.join(&owner.run_id)
                    .join(owner.attempt.to_string())
                    .join(&owner.member)
                    .display(),
                path.display(),
                to.display(),
                root.display()
            )));
        }
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn member_parts_must_be_names() {
        let owner = |run: &str, member: &str| MemberKey {
            run_id: run.to_owned(),
            attempt: 1,
            member: member.to_owned(),
        };
        let root = Path::new("/nonexistent-root");
        assert_eq!(
            member_dir(root, &owner("r", "m")).unwrap(),
            PathBuf::from("/nonexistent-root/r/1/m")
        );
        assert!(member_dir(root, &owner("..", "m")).is_err());
        assert!(member_dir(root, &owner("r", "a/b")).is_err());
    }
}
