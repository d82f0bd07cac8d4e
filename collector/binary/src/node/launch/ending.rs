//! How a launch ends: its collector drained and the end reported, what it left running as
//! its user ended, and the user given back.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

use super::{LaunchRunner, TICK};
use crate::contract::node::launch_report::State;
use crate::node::late::{self, Left};
use crate::node::prepare::Prepared;
use crate::node::processes::end_all;
use crate::node::users::RunAs;

impl LaunchRunner {
    /// The user goes back to the pool once nothing of the launch runs as it, and the
    /// working directory the agent made for it is the agent's again.
    pub(super) fn give_back(&self, run_as: &RunAs) {
        let users = &self.host.users;
        if users.exclusive(run_as) {
            let left = end_all(run_as, Duration::from_secs(10));
            if !left.is_empty() {
                log::error!(
                    "launch {}: processes {left:?} of {} outlived it; {} runs no launch until \
                     they have exited",
                    self.id(),
                    run_as.name(),
                    run_as.name()
                );
            }
            if self.launch.working_directory.is_empty() {
                hand_back(&self.host.work_root.join(self.id().to_string()), run_as);
            }
        }
        users.release(self.id());
    }

    /// Lets the collector read to the end and drain, then reports how it all ended.
    pub(super) fn finish(
        &mut self,
        mut collector: Child,
        prepared: &Prepared,
        state: State,
        code: i32,
        mut detail: String,
    ) {
        // Only one not reaped yet: a reaped one's pid may be another process's by now.
        if matches!(collector.try_wait(), Ok(None)) {
            if let Ok(pid) = libc::pid_t::try_from(collector.id()) {
                // SAFETY: a plain system call on our own child, not yet reaped.
                unsafe { libc::kill(pid, libc::SIGTERM) };
            }
        }
        let drain = self
            .launch
            .collector
            .as_ref()
            .map_or(30, |c| c.drain_seconds);
        let deadline = Instant::now() + Duration::from_secs(u64::try_from(drain).unwrap_or(0) + 60);
        while matches!(collector.try_wait(), Ok(None)) && Instant::now() < deadline {
            self.renew_if_due();
            std::thread::sleep(TICK);
        }
        if matches!(collector.try_wait(), Ok(None)) {
            let _ = collector.kill();
            let _ = collector.wait();
        }
        let undelivered = undelivered_batches(&prepared.spool);
        if undelivered > 0 {
            self.keep_left(prepared, state, code, &detail, undelivered);
            if !detail.is_empty() {
                detail.push_str("; ");
            }
            detail.push_str(&format!(
                "{undelivered} batches left in the spool {}",
                prepared.spool.display()
            ));
        }
        self.report(state, code, &detail, undelivered, 60);
    }
}

impl LaunchRunner {
    /// Notes what the spool was left with, before the end is reported: the agent delivers
    /// it late (`node::late`), also after a restart.
    fn keep_left(&self, prepared: &Prepared, state: State, code: i32, detail: &str, left: i64) {
        let config = self.launch.collector.clone().unwrap_or_default();
        let note = Left {
            spool: prepared.spool.clone(),
            program: prepared
                .collector
                .first()
                .map(PathBuf::from)
                .unwrap_or_default(),
            target: config.telemetry_target,
            server_name: config.server_name,
            state: state as i32,
            exit_code: code,
            detail: detail.to_owned(),
            batches: left,
        };
        if let Err(why) = late::keep(&prepared.directory, &note) {
            log::error!(
                "launch {}: what its spool was left with is not noted ({why}); deliver it                  with `tuneplane-collector deliver {}`",
                self.id(),
                prepared.spool.display()
            );
        }
    }
}

pub(super) trait SignalNumber {
    fn signal_number(&self) -> i32;
}

impl SignalNumber for std::process::ExitStatus {
    fn signal_number(&self) -> i32 {
        std::os::unix::process::ExitStatusExt::signal(self).unwrap_or(0)
    }
}

/// Whether our child `pid` has ended, leaving it unreaped (its pid stays ours).
pub(super) fn exited(pid: u32) -> bool {
    // SAFETY: waitid on our own child with WNOWAIT: it reports and reaps nothing.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        let flags = libc::WEXITED | libc::WNOHANG | libc::WNOWAIT;
        libc::waitid(libc::P_PID, libc::id_t::from(pid), &mut info, flags) != 0
            || info.si_pid() != 0
    }
}

/// Batches a spool still holds, pending or quarantined (none when nothing was spooled).
pub fn undelivered_batches(spool: &Path) -> i64 {
    match crate::spool::status::status(spool) {
        Ok(held) => {
            let pending = held["pending"]["batches"].as_i64().unwrap_or(0);
            let quarantined = held["quarantined"].as_array().map_or(0, Vec::len);
            pending + i64::try_from(quarantined).unwrap_or(0)
        }
        Err(why) if why.0.contains("not found") || why.0.contains("no tables yet") => 0,
        Err(why) => {
            log::error!("cannot tell what the spool holds: {}", why.0);
            0
        }
    }
}

/// A working directory the agent made for `run_as` becomes the agent's (still 0700).
fn hand_back(workdir: &Path, run_as: &RunAs) {
    if let Ok(info) = fs::symlink_metadata(workdir) {
        if info.is_dir() && info.uid() == run_as.uid() {
            let me = (
                nix::unistd::geteuid().as_raw(),
                nix::unistd::getegid().as_raw(),
            );
            if let Err(e) = std::os::unix::fs::lchown(workdir, Some(me.0), Some(me.1)) {
                log::error!(
                    "cannot take {} back from {}: {e}",
                    workdir.display(),
                    run_as.name()
                );
            }
        }
    }
}
