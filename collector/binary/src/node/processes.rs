//! The processes a run-as user runs, and ending them all before the user serves again.
//!
//! A user of an exclusive pool is held by one launch at a time, so once that launch has ended
//! every process of the user is a leftover of it (a daemon that left the training command's
//! session, say), which could read or signal the next launch given the user. They are killed
//! from inside the user, `kill(-1, SIGKILL)` as it: the kernel signals them all in one pass,
//! so no process forking in a loop outruns it. A process is the user's when any of its user
//! ids (real, effective, saved, filesystem) is; a zombie is not counted (it runs no code).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Duration, Instant};

use super::users::RunAs;

/// The user ids of a process from its `/proc/<pid>/status`; none for a zombie.
pub fn owners(status: &str) -> BTreeSet<u32> {
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .map(str::trim)
            .unwrap_or_default()
    };
    if field("State:").starts_with('Z') {
        return BTreeSet::new();
    }
    field("Uid:")
        .split_whitespace()
        .filter_map(|u| u.parse().ok())
        .collect()
}

/// Every live process (not a zombie) by pid, with its user ids.
pub fn processes(proc: &Path) -> BTreeMap<u32, BTreeSet<u32>> {
    let Ok(entries) = std::fs::read_dir(proc) else {
        return BTreeMap::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            // It may exit while we look: then it is not there.
            let status = std::fs::read_to_string(entry.path().join("status")).ok()?;
            let uids = owners(&status);
            (!uids.is_empty()).then_some((pid, uids))
        })
        .collect()
}

/// The users that run at least one live process now.
pub fn live_uids() -> BTreeSet<u32> {
    processes(Path::new("/proc"))
        .into_values()
        .flatten()
        .collect()
}

pub fn processes_of(uid: u32) -> Vec<u32> {
    processes(Path::new("/proc"))
        .into_iter()
        .filter(|(_, uids)| uids.contains(&uid))
        .map(|(pid, _)| pid)
        .collect()
}

/// `kill(-1, SIGKILL)` from a child that is `user`: every process of the user but that
/// child. The child makes system calls only (the agent has threads).
fn kill_all_as(user: &RunAs) {
    let (uid, gid) = (user.uid(), user.id.gid);
    // SAFETY: the child calls only async-signal-safe system calls, then _exit.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // SAFETY: plain system calls on values copied before the fork.
        unsafe {
            let ok = libc::setgroups(0, std::ptr::null()) == 0
                && libc::setresgid(gid, gid, gid) == 0
                && libc::setresuid(uid, uid, uid) == 0;
            if ok {
                libc::kill(-1, libc::SIGKILL);
            }
            libc::_exit(i32::from(!ok));
        }
    }
    if pid > 0 {
        let mut status = 0;
        // SAFETY: waits for the child just forked.
        unsafe { libc::waitpid(pid, &mut status, 0) };
    }
}

/// Kills every process of `user` and waits until none is left; the pids still there after
/// `timeout` (one in uninterruptible sleep, say), or none.
pub fn end_all(user: &RunAs, timeout: Duration) -> Vec<u32> {
    let deadline = Instant::now() + timeout;
    loop {
        let left = processes_of(user.uid());
        if left.is_empty() || Instant::now() >= deadline {
            return left;
        }
        kill_all_as(user);
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_is_the_users_by_any_of_its_ids_and_a_zombie_is_no_ones() {
        let running = "Name:\tx\nState:\tS (sleeping)\nUid:\t1000\t0\t0\t1001\n";
        assert_eq!(owners(running), BTreeSet::from([0, 1000, 1001]));
        assert!(owners("Name:\tx\nState:\tZ (zombie)\nUid:\t1000\t1000\t1000\t1000\n").is_empty());
        assert!(processes(Path::new("/proc")).contains_key(&std::process::id()));
    }
}
