//! One launch on this node: once it holds a run-as user of its own (it waits for one,
//! reported waiting) and is prepared (checked, granted, written), run the training command
//! as that user with a collector beside it, keep the collector's token fresh, let the
//! collector drain, end what the launch left running and give the user back.

use std::fs;
use std::os::unix::fs::DirBuilderExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::client::Control;
use super::host::Host;
use super::prepare::{prepare, wanted_user, Refused};
use super::reports;
use super::state::write_private;
use super::training::{environment, signal_group, start_collector, start_training};
use super::users::RunAs;
use crate::contract::node::launch_report::State;
use crate::contract::node::{Launch, LaunchReport, WorkloadToken};
use crate::run::Flag;

/// How often a running launch looks at its processes and its token.
const TICK: Duration = Duration::from_millis(250);

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// Runs one launch to its end on a thread of the agent; reports every state change.
pub struct LaunchRunner {
    launch: Launch,
    client: Arc<dyn Control>,
    dir: PathBuf,
    host: Arc<Host>,
    stopping: Arc<Flag>,
    token: WorkloadToken,
    token_received: f64,
}

impl LaunchRunner {
    pub fn new(
        launch: Launch,
        client: Arc<dyn Control>,
        dir: PathBuf,
        host: Arc<Host>,
        stopping: Arc<Flag>,
    ) -> Self {
        let token = launch.token.clone().unwrap_or_default();
        Self {
            launch,
            client,
            dir,
            host,
            stopping,
            token,
            token_received: now(),
        }
    }

    fn id(&self) -> i64 {
        self.launch.launch_id
    }

    fn report(&self, state: State, exit_code: i32, detail: &str, undelivered: i64, patience: u64) {
        let report = LaunchReport {
            launch_id: self.id(),
            state: state as i32,
            exit_code,
            detail: detail.to_owned(),
            undelivered_batches: undelivered,
        };
        reports::send(
            self.client.as_ref(),
            &self.dir,
            &report,
            Duration::from_secs(patience),
        );
    }

    /// The launch's directory: once it exists, an agent restarted never starts the launch
    /// again (so it is made only when something of the launch may start).
    fn claim(&self) -> Result<(), String> {
        let mut builder = fs::DirBuilder::new();
        builder.mode(0o700);
        if let Some(parent) = self.dir.parent() {
            builder
                .recursive(true)
                .create(parent)
                .map_err(|e| e.to_string())?;
        }
        builder
            .recursive(false)
            .create(&self.dir)
            .map_err(|e| format!("cannot make {}: {e}", self.dir.display()))
    }

    fn renew_if_due(&mut self) {
        let lifetime = self.token.expires_at as f64 - self.token_received;
        if now() < self.token_received + lifetime / 2.0 {
            return;
        }
        match self.client.renew(self.id()) {
            Ok(fresh) => {
                if let Err(why) = write_private(&self.dir.join("token"), fresh.token.as_bytes()) {
                    log::error!("launch {}: renewed token not written: {why}", self.id());
                    return;
                }
                log::info!(
                    "launch {}: workload token renewed (until {})",
                    self.id(),
                    fresh.expires_at
                );
                self.token = fresh;
                self.token_received = now();
            }
            Err(refused) => {
                // Control unreachable: the current token still serves; again in 2 s.
                log::warn!(
                    "launch {}: workload token renewal failed, retrying: {refused}",
                    self.id()
                );
                self.token_received = now() - lifetime / 2.0 + 2.0;
            }
        }
    }

    /// Waits for a run-as user, runs the launch as it, then gives the user back.
    pub fn run(mut self) {
        let wanted = match wanted_user(&self.launch, &self.host) {
            Ok(wanted) => wanted,
            Err(Refused(why)) => {
                if let Err(e) = self.claim() {
                    log::error!("launch {}: {e}", self.id());
                }
                self.report(State::Refused, 0, &why, 0, 60);
                return;
            }
        };
        let Some(run_as) = self.wait_for_user(wanted) else {
            log::info!(
                "launch {}: not started, the agent stops first; control delivers it again",
                self.id()
            );
            return;
        };
        match self.claim() {
            Ok(()) => {
                self.renew_if_due(); // one that waited long may hold a token near its end
                self.launch.token = Some(self.token.clone());
                self.run_as(&run_as);
            }
            Err(why) => self.report(State::Failed, -1, &why, 0, 60),
        }
        self.give_back(&run_as);
    }

    fn wait_for_user(&self, wanted: Option<RunAs>) -> Option<RunAs> {
        let users = &self.host.users;
        let mut run_as = users.take(self.id(), wanted);
        if run_as.is_none() {
            let reason = users.reason(self.id());
            log::info!("launch {}: {reason}", self.id());
            self.report(State::Waiting, 0, &reason, 0, 10);
            run_as = users.wait(self.id(), &self.stopping);
        }
        users.leave(self.id());
        if let Some(user) = &run_as {
            log::info!("launch {}: runs as {}", self.id(), user.name());
        }
        run_as
    }
    fn collector_env(&self) -> Vec<(&'static str, String)> {
        let config = self.launch.collector.clone().unwrap_or_default();
        vec![
            (
                "TUNEPLANE_TELEMETRY_SPOOL_BYTES",
                config.spool_bytes.to_string(),
            ),
            (
                "TUNEPLANE_TELEMETRY_DRAIN_SECONDS",
                config.drain_seconds.to_string(),
            ),
        ]
    }

    /// Prepares, then runs training as `run_as` and its collector to the end.
    fn run_as(&mut self, run_as: &RunAs) {
        let prepared = match prepare(&self.launch, &self.dir, &self.host, run_as) {
            Ok(prepared) => prepared,
            Err(Refused(why)) => return self.report(State::Refused, 0, &why, 0, 60),
        };
        let mut collector = match start_collector(
            &prepared.collector,
            &prepared.directory,
            &self.collector_env(),
        ) {
            Ok(child) => child,
            Err(why) => return self.report(State::Failed, 127, &why, 0, 60),
        };
        let identity = [
            ("TUNEPLANE_RUN_ID", self.launch.run_id.clone()),
            ("TUNEPLANE_ATTEMPT", self.launch.attempt.to_string()),
            ("TUNEPLANE_MEMBER", self.launch.member.clone()),
            ("TUNEPLANE_PROJECT", self.launch.project.clone()),
        ];
        let env = environment(
            run_as,
            &prepared.workdir,
            &self.launch.environment,
            &identity,
        );
        let log = prepared.directory.join("training.log");
        let mut training =
            match start_training(run_as, &self.launch.command, &prepared.workdir, &env, &log) {
                Ok(child) => child,
                Err(why) => {
                    let detail = format!("training command could not start: {why}");
                    return self.finish(collector, &prepared, State::Failed, 127, detail);
                }
            };
        self.report(State::Running, 0, "", 0, 60);
        let (mut terminated, mut pause, mut started) = (false, Duration::ZERO, Instant::now());
        let status = loop {
            if exited(training.id()) {
                // Its group is signalled before the leader is reaped: until then no other
                // process can have its pid, so the signal reaches what it left, nothing else.
                signal_group(training.id(), libc::SIGKILL);
                match training.wait() {
                    Ok(status) => break status,
                    Err(e) => {
                        log::error!("launch {}: training command not reaped: {e}", self.id());
                        break std::os::unix::process::ExitStatusExt::from_raw(0xff00);
                    }
                }
            }
            self.renew_if_due();
            let at = Instant::now();
            if let Ok(Some(ended)) = collector.try_wait() {
                if at >= started + pause {
                    // One that keeps exiting is not restarted hot.
                    pause = if at - started > Duration::from_secs(60) {
                        Duration::ZERO
                    } else {
                        (pause * 2).clamp(Duration::from_secs(1), Duration::from_secs(30))
                    };
                    let again = if pause.is_zero() {
                        String::new()
                    } else {
                        format!("; if it exits again, in {} s", pause.as_secs())
                    };
                    log::warn!(
                        "launch {}: collector exited ({ended}) while training runs; restarting \
                         it (the spool resumes where it was){again}",
                        self.id()
                    );
                    match start_collector(
                        &prepared.collector,
                        &prepared.directory,
                        &self.collector_env(),
                    ) {
                        Ok(child) => collector = child,
                        Err(why) => log::error!("launch {}: {why}", self.id()),
                    }
                    started = at;
                }
            }
            if self.stopping.is_set() && !terminated {
                signal_group(training.id(), libc::SIGTERM);
                terminated = true;
            }
            std::thread::sleep(TICK);
        };
        let code = status.code().unwrap_or_else(|| -status.signal_number());
        let (state, detail) = if code == 0 {
            (State::Finished, String::new())
        } else {
            (
                State::Failed,
                format!("training command exited with {code}"),
            )
        };
        self.finish(collector, &prepared, state, code, detail);
    }
}

mod ending;

pub use ending::undelivered_batches;
use ending::{exited, SignalNumber};

#[cfg(test)]
mod tests;
