//! `deliver` run as a child of another process (the node agent, a Slurm job's collector):
//! its output appended to a log of its own, and stopped with SIGTERM, which leaves what it
//! did not send in the spool for later, when its parent stops.

use std::fs;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::run::Flag;

/// One `deliver` of a spool under a deliver-only credential.
pub struct Child<'a> {
    /// The collector program (the one that wrote the spool, or this one).
    pub program: &'a Path,
    pub spool: &'a Path,
    pub target: &'a str,
    pub ca_file: &'a Path,
    pub server_name: &'a str,
    pub token_file: &'a Path,
    /// How long it keeps trying while ingest does not take the batches.
    pub patience: u64,
    /// Where its output goes (appended; made 0600, never through a link).
    pub log: &'a Path,
}

impl Child<'_> {
    /// Its exit status; why not when it could not start or `stopping` stopped it.
    pub fn run(&self, stopping: &Flag) -> Result<i32, String> {
        let log = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(self.log)
            .map_err(|e| format!("cannot open {}: {e}", self.log.display()))?;
        let err = log.try_clone().map_err(|e| e.to_string())?;
        let mut command = Command::new(self.program);
        command.arg("deliver").arg(self.spool);
        command.args(["--target", self.target, "--ca-file"]);
        command
            .arg(self.ca_file)
            .arg("--token-file")
            .arg(self.token_file);
        if !self.server_name.is_empty() {
            command.args(["--server-name", self.server_name]);
        }
        command.args(["--patience", &self.patience.to_string()]);
        let mut child = command
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err)
            .spawn()
            .map_err(|e| format!("{} could not start: {e}", self.program.display()))?;
        loop {
            if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
                return Ok(status.code().unwrap_or(-1));
            }
            if stopping.wait(Duration::from_millis(250)) {
                if let Ok(pid) = libc::pid_t::try_from(child.id()) {
                    // SAFETY: a plain system call on our own child, not yet reaped.
                    unsafe { libc::kill(pid, libc::SIGTERM) };
                }
                let _ = child.wait();
                return Err("stopped before the delivery ended".into());
            }
        }
    }
}
