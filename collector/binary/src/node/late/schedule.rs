//! When the agent tries each late delivery: one spool at a time, on a worker thread, a
//! launch only once control has its final report and no runner handles it; a try that did
//! not deliver waits before the next, the wait doubling from `FIRST_WAIT` to `MAX_WAIT`.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::{deliver_once, Outcome, NOTE};
use crate::node::client::ControlClient;
use crate::node::reports::PENDING;
use crate::run::Flag;

const FIRST_WAIT: Duration = Duration::from_secs(5);
const MAX_WAIT: Duration = Duration::from_secs(300);

#[derive(Default)]
pub struct Late {
    worker: Option<(i64, JoinHandle<Outcome>)>,
    /// Per launch tried and not delivered: when it is tried next, and the wait after that.
    waits: BTreeMap<i64, (Instant, Duration)>,
}

/// Launches whose directories hold a note, oldest first.
fn noted(launches: &Path) -> Vec<(i64, PathBuf)> {
    let Ok(entries) = fs::read_dir(launches) else {
        return Vec::new();
    };
    let mut found: Vec<(i64, PathBuf)> = entries
        .flatten()
        .filter_map(|e| Some((e.file_name().to_str()?.parse().ok()?, e.path())))
        .filter(|(_, path): &(i64, PathBuf)| path.join(NOTE).is_file())
        .collect();
    found.sort();
    found
}

impl Late {
    /// Takes the worker's outcome if it ended, then starts the next launch that is due.
    pub fn step(
        &mut self,
        client: &Arc<ControlClient>,
        launches: &Path,
        busy: &BTreeSet<i64>,
        stopping: &Arc<Flag>,
    ) {
        if self.worker.as_ref().is_some_and(|(_, w)| w.is_finished()) {
            self.ended();
        }
        if self.worker.is_some() || stopping.is_set() {
            return;
        }
        let now = Instant::now();
        let due = noted(launches).into_iter().find(|(id, dir)| {
            !busy.contains(id)
                && !dir.join(PENDING).exists()
                && self.waits.get(id).is_none_or(|(at, _)| *at <= now)
        });
        let Some((id, dir)) = due else {
            return;
        };
        log::info!("launch {id}: delivering late the batches it left in its spool");
        let (client, stopping) = (Arc::clone(client), Arc::clone(stopping));
        let worker = std::thread::Builder::new()
            .name(format!("late-{id}"))
            .spawn(move || deliver_once(&client, id, &dir, &stopping));
        match worker {
            Ok(worker) => self.worker = Some((id, worker)),
            Err(e) => log::error!("launch {id}: no thread to deliver late: {e}"),
        }
    }

    fn ended(&mut self) {
        let Some((id, worker)) = self.worker.take() else {
            return;
        };
        let outcome = worker
            .join()
            .unwrap_or_else(|_| Outcome::Later("the delivery thread panicked".into()));
        match outcome {
            Outcome::Delivered => {
                self.waits.remove(&id);
                log::info!("launch {id}: what it left in its spool is delivered");
            }
            Outcome::Later(why) => {
                let wait = self.waits.get(&id).map_or(FIRST_WAIT, |(_, w)| *w);
                self.waits
                    .insert(id, (Instant::now() + wait, (wait * 2).min(MAX_WAIT)));
                log::warn!(
                    "launch {id}: its spool's batches not delivered yet ({why}); tried again \
                     in {} s",
                    wait.as_secs()
                );
            }
            Outcome::Refused(why) => {
                self.waits.remove(&id);
                log::error!(
                    "launch {id}: Node control gives no credential to deliver what it left \
                     ({why}); the spool is kept for an operator (`tuneplane-collector \
                     deliver SPOOL`)"
                );
            }
        }
    }

    /// Whether nothing is being delivered and no launch has batches left to deliver.
    pub fn idle(&self, launches: &Path) -> bool {
        self.worker.is_none() && noted(launches).is_empty()
    }

    /// Waits for the worker (it stops its `deliver` when the agent stops).
    pub fn stop(&mut self) {
        self.ended();
    }
}
