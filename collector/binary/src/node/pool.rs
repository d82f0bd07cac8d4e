//! Which launch holds which run-as user; launches beyond the pool wait their turn.
//!
//! Each running launch has a run-as user of its own, so no launch's training code can read
//! another's working directory or signal its processes. A launch holds its user from before
//! its working directory is made until every process of it has exited (the runner ends them
//! before `release`), and a user still running a process no launch holds (left by an earlier
//! life of the agent, or an operator's) is given to no launch. Launches beyond the pool wait
//! in the order they came, each for the first free user, or for the one user that owns the
//! working directory it names. Shared (`--share-run-as`), users are not exclusive: a launch
//! takes the least busy one at once, and launches running as one user can reach each other.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use super::users::RunAs;
use crate::run::Flag;

type LiveUids = Box<dyn Fn() -> BTreeSet<u32> + Send + Sync>;

#[derive(Default)]
struct Held {
    holders: BTreeMap<i64, RunAs>,
    /// Waiting launches in the order they came, each with the user it needs.
    queue: Vec<(i64, Option<RunAs>)>,
}

/// The run-as users of this node and who holds them; safe to use from any thread.
pub struct UserPool {
    pub users: Vec<RunAs>,
    pub shared: bool,
    live_uids: LiveUids,
    held: Mutex<Held>,
    changed: Condvar,
}

impl UserPool {
    pub fn new(users: Vec<RunAs>, shared: bool, live_uids: LiveUids) -> Result<Self, String> {
        if users.is_empty() {
            return Err("a pool of run-as users needs one user at least".into());
        }
        Ok(Self {
            users,
            shared,
            live_uids,
            held: Mutex::default(),
            changed: Condvar::new(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether a launch holds `user` alone (what it leaves running is then ended).
    pub fn exclusive(&self, user: &RunAs) -> bool {
        !self.shared && !user.same_user
    }

    /// The launch's user, now held by it, if its turn has come and a user is free;
    /// otherwise None and the launch waits in line (`wait`, `leave`).
    pub fn take(&self, launch_id: i64, wanted: Option<RunAs>) -> Option<RunAs> {
        let mut held = self.lock();
        self.take_locked(&mut held, launch_id, wanted)
    }

    fn take_locked(&self, held: &mut Held, launch_id: i64, wanted: Option<RunAs>) -> Option<RunAs> {
        if !held.queue.iter().any(|(id, _)| *id == launch_id) {
            held.queue.push((launch_id, wanted));
        }
        let user = if self.shared {
            let asked = held.queue.iter().find(|(id, _)| *id == launch_id);
            asked
                .and_then(|(_, w)| w.clone())
                .or_else(|| Some(self.least_busy(held)))
        } else {
            self.turns(held).remove(&launch_id)
        };
        if let Some(user) = &user {
            held.queue.retain(|(id, _)| *id != launch_id);
            held.holders.insert(launch_id, user.clone());
        }
        user
    }

    /// `take` until it gives the launch a user, or None once `stopping` is set. Wakes when
    /// a user is released, and every half second: a leftover process may have exited.
    pub fn wait(&self, launch_id: i64, stopping: &Flag) -> Option<RunAs> {
        let mut held = self.lock();
        while !stopping.is_set() {
            if let Some(user) = self.take_locked(&mut held, launch_id, None) {
                return Some(user);
            }
            held = self
                .changed
                .wait_timeout(held, Duration::from_millis(500))
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        None
    }

    /// The launch waits no longer (the agent stops); those behind it move up.
    pub fn leave(&self, launch_id: i64) {
        let mut held = self.lock();
        let before = held.queue.len();
        held.queue.retain(|(id, _)| *id != launch_id);
        if held.queue.len() != before {
            self.changed.notify_all();
        }
    }

    /// The launch holds its user no longer: nothing of it runs as the user now.
    pub fn release(&self, launch_id: i64) {
        if self.lock().holders.remove(&launch_id).is_some() {
            self.changed.notify_all();
        }
    }

    fn least_busy(&self, held: &Held) -> RunAs {
        let load = |user: &RunAs| {
            held.holders
                .values()
                .filter(|h| h.uid() == user.uid())
                .count()
        };
        // Ties go to the first in the pool's order.
        let mut best = &self.users[0];
        for user in &self.users {
            if load(user) < load(best) {
                best = user;
            }
        }
        best.clone()
    }

    /// Users no launch holds: those free, and those still running a process (never the
    /// agent's own user, which runs the agent).
    fn free(&self, held: &Held) -> (Vec<RunAs>, Vec<RunAs>) {
        let taken: BTreeSet<u32> = held.holders.values().map(RunAs::uid).collect();
        let idle: Vec<&RunAs> = self
            .users
            .iter()
            .filter(|u| !taken.contains(&u.uid()))
            .collect();
        let live = if idle.iter().any(|u| !u.same_user) {
            (self.live_uids)()
        } else {
            BTreeSet::new()
        };
        let (stray, free): (Vec<&RunAs>, Vec<&RunAs>) = idle
            .into_iter()
            .partition(|u| !u.same_user && live.contains(&u.uid()));
        (
            free.into_iter().cloned().collect(),
            stray.into_iter().cloned().collect(),
        )
    }

    /// Which waiting launch gets which free user now, in the order they came.
    fn turns(&self, held: &Held) -> BTreeMap<i64, RunAs> {
        let (mut free, _) = self.free(held);
        let mut given = BTreeMap::new();
        for (launch_id, wanted) in &held.queue {
            let found = free
                .iter()
                .position(|u| wanted.as_ref().is_none_or(|w| w.uid() == u.uid()));
            if let Some(index) = found {
                given.insert(*launch_id, free.remove(index));
            }
        }
        given
    }

    /// Why the launch waits, in words for whoever lists the launches.
    pub fn reason(&self, launch_id: i64) -> String {
        let held = self.lock();
        let (_, stray) = self.free(&held);
        let position = held.queue.iter().position(|(id, _)| *id == launch_id);
        let wanted = position.and_then(|p| held.queue[p].1.clone());
        if let Some(wanted) = wanted {
            let why = if held.holders.values().any(|h| h.uid() == wanted.uid()) {
                "held by another launch"
            } else if stray.contains(&wanted) {
                "still running processes of no launch"
            } else {
                "promised to a launch that came first"
            };
            return format!(
                "waiting for run-as user {}, the owner of its working directory: {why}",
                wanted.name()
            );
        }
        let strays = if stray.is_empty() {
            String::new()
        } else {
            let names: Vec<&str> = stray.iter().map(RunAs::name).collect();
            format!(
                " ({} still running processes of no launch)",
                names.join(", ")
            )
        };
        let busy = match self.users.len() {
            1 => "the only one is busy".to_owned(),
            count => format!("all {count} are busy"),
        };
        let before = match position.unwrap_or(0) {
            0 => String::new(),
            1 => "; 1 launch waiting before it".to_owned(),
            ahead => format!("; {ahead} launches waiting before it"),
        };
        format!("waiting for a free run-as user: {busy}{strays}{before}")
    }
}

#[cfg(test)]
mod tests;
