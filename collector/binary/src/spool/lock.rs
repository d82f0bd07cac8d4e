//! One collector at a time per spool. Two collectors of one member on one spool would each
//! read the sources from the same saved position and seal every point twice, under batch
//! numbers of their own that no identity check can match; so a collector holds an exclusive
//! lock on `spool.lock` in its spool directory for as long as it runs, and a second one is
//! refused saying so. The kernel lets go of the lock when the process ends, however it ends.
//! `spool status` takes no lock: it only reads.

use std::fs::OpenOptions;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg, OFlag};

use super::{place, SpoolError};

pub const FILE: &str = "spool.lock";

/// The lock, held until dropped.
pub struct Held(#[allow(dead_code)] Flock<std::fs::File>);

/// The spool directory `directory` made (private, on a host-local filesystem, as
/// `Spool::open` makes it) and locked for this process.
pub fn hold(directory: &Path, mountinfo: &str) -> Result<Held, SpoolError> {
    place::prepare(directory, mountinfo)?;
    let path = directory.join(FILE);
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .custom_flags((OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC).bits())
        .open(&path)
        .map_err(|e| SpoolError(format!("cannot open {}: {e}", path.display())))?;
    match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
        Ok(held) => Ok(Held(held)),
        Err((_, Errno::EWOULDBLOCK)) => Err(SpoolError(format!(
            "spool {} is in use by another collector; a member runs one collector at a time",
            directory.display()
        ))),
        Err((_, e)) => Err(SpoolError(format!("cannot lock {}: {e}", path.display()))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_until_the_first_lets_go() {
        let place = std::env::temp_dir().join(format!("tp-lock-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&place);
        let local = "1 0 8:1 / / rw - ext4 /dev/sda1 rw\n";
        let first = hold(&place, local).expect("the first collector holds it");
        let refused = hold(&place, local).err().expect("a second one is refused");
        assert!(
            refused.0.contains("in use by another collector"),
            "{}",
            refused.0
        );
        drop(first);
        hold(&place, local).expect("free again once the first is gone");
        let _ = std::fs::remove_dir_all(&place);
    }
}
