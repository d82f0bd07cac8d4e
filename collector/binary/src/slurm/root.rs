//! A Slurm job's spool root on its node: checked before the ticket is redeemed.
//!
//! On a shared filesystem it is refused, with no fallback. Owned by the job's user, it must
//! be private (0700) and holds the spools itself. Shared by the node's users the way `/tmp`
//! is (root's, sticky, writable by all: `install -d -m 1777 /local/scratch/tuneplane`),
//! each user's spools go below `<root>/<uid>`, made private by that user's first job; one
//! another user made first, or a link, is refused naming its owner. Owned by another user,
//! it is refused: a root the first job made for its own user would refuse everyone else's.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::spool::mounts::check_filesystem_saying;
use crate::spool::place::make_private;

const HINT: &str = "Launch with --spool-root on a node-local directory such as /tmp or the \
                    node's scratch disk (no other is tried)";
const SHARED: &str = "a spool root the node's users share is root's, sticky and writable \
                      by all, as /tmp is (install -d -m 1777 DIR): each user's spools go below \
                      DIR/<uid>";

/// Where this user's spools go below `root`, made private; or why `root` is refused.
pub fn user_root(root: &Path, mountinfo: &str) -> Result<PathBuf, String> {
    check_filesystem_saying(root, mountinfo, HINT).map_err(|e| e.0)?;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let uid = unsafe { libc::geteuid() };
    let shared = std::fs::metadata(root)
        .is_ok_and(|m| m.is_dir() && m.uid() == 0 && m.permissions().mode() & 0o1002 == 0o1002);
    if !shared || uid == 0 {
        return match make_private(root, "spool root") {
            Ok(()) => Ok(root.to_path_buf()),
            Err(e) => Err(format!("{}; {SHARED}", e.0)),
        };
    }
    let mine = root.join(uid.to_string());
    if std::fs::symlink_metadata(&mine).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(format!("spool root {} is a symbolic link", mine.display()));
    }
    make_private(&mine, "spool root").map_err(|e| e.0)?;
    Ok(mine)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOCAL: &str = "22 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw\n";

    #[test]
    fn a_root_of_ones_own_holds_the_spools_and_any_other_is_refused_saying_how_to_share() {
        let base = std::env::temp_dir().join(format!("root-{}", std::process::id()));
        let own = base.join("own");
        assert_eq!(user_root(&own, LOCAL).unwrap(), own); // made, 0700
        let mode = std::fs::metadata(&own).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode, 0o700);
        let open = base.join("open");
        std::fs::create_dir_all(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o755)).unwrap();
        let why = user_root(&open, LOCAL).unwrap_err();
        assert!(
            why.contains("must be 0700") && why.contains("install -d -m 1777"),
            "{why}"
        );
        let nfs = "22 1 8:1 / / rw - ext4 /dev/sda1 rw\n30 22 0:40 / /tmp rw - nfs4 s:/e rw\n";
        let why = user_root(Path::new("/tmp/x"), nfs).unwrap_err();
        assert!(
            why.contains("is on NFS") && why.contains("no other is tried"),
            "{why}"
        );
        std::fs::remove_dir_all(&base).unwrap();
    }
}
