//! The processes a run-as user runs, and ending them all before the user serves again.
//!
//! A user of an exclusive pool is held by one launch at a time, so once that launch has ended
//! every process of the user is a leftover of it (a daemon that left the training command's
//! session, say), which could read or signal the next launch given the user. They are killed
//! from inside the user, `kill(-1, SIGKILL)` as it: the kernel signals them all in one pass,
//! so no process forking in a loop outruns it. A process is the user's when any of its user
//! ids (real, effective, saved, filesystem) is; a zombie is not counted (it runs no code),
//! but a process whose first thread has exited while others run on is (its leader shows as a
//! zombie in `/proc/<pid>/status`; its tasks tell).

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

/// The user ids of the process at `path` (`/proc/<pid>`): its leader's, or, when the leader
/// has exited, those of the first of its threads still running; none for a zombie.
fn process_owners(path: &Path) -> BTreeSet<u32> {
    // It may exit while we look: then it is not there.
    let status = std::fs::read_to_string(path.join("status")).unwrap_or_default();
    let uids = owners(&status);
    if !uids.is_empty() || status.is_empty() {
        return uids;
    }
    let Ok(tasks) = std::fs::read_dir(path.join("task")) else {
        return uids;
    };
    tasks
        .flatten()
        .map(|task| {
            owners(&std::fs::read_to_string(task.path().join("status")).unwrap_or_default())
        })
        .find(|uids| !uids.is_empty())
        .unwrap_or_default()
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
            let uids = process_owners(&entry.path());
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
        // Once at least, whatever /proc shows: what it cannot show is killed all the same.
        kill_all_as(user);
        std::thread::sleep(Duration::from_millis(50));
        let left = processes_of(user.uid());
        if left.is_empty() || Instant::now() >= deadline {
            return left;
        }
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

    #[test]
    fn a_process_whose_first_thread_exited_still_counts() {
        // Its leader shows as a zombie while another thread runs on.
        let script = "import ctypes, threading, time\n\
                      threading.Thread(target=time.sleep, args=(30,)).start()\n\
                      ctypes.CDLL(None).pthread_exit(None)\n";
        let mut child = std::process::Command::new("python3")
            .args(["-c", script])
            .spawn()
            .unwrap();
        let status = std::path::PathBuf::from(format!("/proc/{}/status", child.id()));
        let deadline = Instant::now() + Duration::from_secs(30);
        while !std::fs::read_to_string(&status)
            .unwrap_or_default()
            .contains("State:\tZ")
        {
            assert!(Instant::now() < deadline, "the leader never exited");
            std::thread::sleep(Duration::from_millis(20));
        }
        let found = processes(Path::new("/proc")).contains_key(&child.id());
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(found, "a process running threads was taken for a zombie");
    }
}
