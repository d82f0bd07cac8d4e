//! The node agent loop: beat, take new launches, run each on its own thread.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tonic::Code;

use super::client::ControlClient;
use super::host::Host;
use super::late::Late;
use super::launch::LaunchRunner;
use super::reports;
use crate::contract::node::launch_report::State;
use crate::contract::node::{Launch, LaunchReport};
use crate::run::Flag;

pub struct Agent {
    host: Arc<Host>,
    client: Arc<ControlClient>,
    pub stopping: Arc<Flag>,
    runners: BTreeMap<i64, JoinHandle<()>>,
    late: Late,
}

impl Agent {
    pub fn new(host: Host, client: ControlClient) -> Self {
        Self {
            host: Arc::new(host),
            client: Arc::new(client),
            stopping: Arc::new(Flag::default()),
            runners: BTreeMap::new(),
            late: Late::default(),
        }
    }

    fn launches(&self) -> PathBuf {
        self.host.state_dir.join("launches")
    }

    fn take(&mut self, launch: Launch) {
        let id = launch.launch_id;
        if self.runners.contains_key(&id) {
            return; // delivered again before our RUNNING report landed
        }
        let directory = self.launches().join(id.to_string());
        if directory.exists() {
            if directory.join(reports::PENDING).exists() {
                return; // it ended; its final report is on its way (resend_pending)
            }
            // Taken by an earlier life of this agent that died before reporting it started:
            // its processes may still run, so it is never started twice.
            let report = LaunchReport {
                launch_id: id,
                state: State::Failed as i32,
                exit_code: -1,
                detail: format!(
                    "the node agent restarted before the launch was reported running; not \
                     started twice (see {})",
                    directory.display()
                ),
                undelivered_batches: 0,
            };
            reports::send(
                self.client.as_ref(),
                &directory,
                &report,
                Duration::from_secs(30),
            );
            return;
        }
        log::info!(
            "launch {id}: {} attempt {} member {}: {}",
            launch.run_id,
            launch.attempt,
            launch.member,
            launch.command.join(" ")
        );
        let runner = LaunchRunner::new(
            launch,
            Arc::clone(&self.client) as Arc<dyn super::client::Control>,
            directory,
            Arc::clone(&self.host),
            Arc::clone(&self.stopping),
        );
        let thread = std::thread::Builder::new()
            .name(format!("launch-{id}"))
            .spawn(move || runner.run());
        match thread {
            Ok(thread) => {
                self.runners.insert(id, thread);
            }
            Err(e) => log::error!("launch {id}: no thread to run it: {e}"),
        }
    }

    pub fn running(&self) -> Vec<i64> {
        self.runners
            .iter()
            .filter(|(_, t)| !t.is_finished())
            .map(|(id, _)| *id)
            .collect()
    }

    /// One heartbeat; the time until the next.
    pub fn beat(&mut self) -> Duration {
        let reply = match self.client.heartbeat(self.running()) {
            Ok(reply) => reply,
            Err(refused) => {
                if refused.code == Code::Unauthenticated {
                    log::error!("heartbeat failed: {refused}");
                } else {
                    log::warn!("heartbeat failed: {refused}");
                }
                return Duration::from_secs(5);
            }
        };
        if !reply.renewed_node_token.is_empty() {
            match self
                .client
                .renewed(reply.renewed_node_token, &self.host.state_dir)
            {
                Ok(()) => log::info!("node token renewed"),
                Err(why) => log::error!("node token renewed but not kept: {why}"),
            }
        }
        for launch in reply.launches {
            self.take(launch);
        }
        let busy: BTreeSet<i64> = self.running().into_iter().collect();
        reports::resend_pending(self.client.as_ref(), &self.launches(), &busy);
        let launches = self.launches();
        self.late
            .step(&self.client, &launches, &busy, &self.stopping);
        let next = u64::try_from(reply.next_heartbeat_seconds).unwrap_or(0);
        Duration::from_secs(if next == 0 { 5 } else { next })
    }

    /// Until stopped (or `exit_after` launches have ended, or, `until_delivered`, nothing
    /// runs and nothing is left to deliver); then ends what runs.
    pub fn run(&mut self, exit_after: Option<usize>, until_delivered: bool) {
        let done = |agent: &Self| {
            let ended = agent.running().is_empty();
            exit_after.is_some_and(|n| agent.runners.len() >= n && ended)
                || (until_delivered && ended && agent.late.idle(&agent.launches()))
        };
        while !self.stopping.is_set() && !done(self) {
            let next_beat = Instant::now() + self.beat();
            while Instant::now() < next_beat && !self.stopping.is_set() && !done(self) {
                self.stopping.wait(Duration::from_millis(250));
            }
        }
        self.stopping.set(); // training commands get SIGTERM; collectors drain
        for (_, thread) in std::mem::take(&mut self.runners) {
            let _ = thread.join();
        }
        self.late.stop();
    }
}
