//! The credentials a Slurm job's collector holds: the job credential and its members'
//! workload tokens, in this process's memory only, renewed at half their life.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::control::{JobControl, Refused};
use crate::contract::node::JobCredentials;
use crate::run::Flag;

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

struct Held {
    credential: String,
    expires_at: f64,
    received: f64,
    tokens: HashMap<String, String>,
}

impl Held {
    fn of(credentials: JobCredentials) -> Self {
        Self {
            credential: credentials.credential,
            expires_at: credentials.expires_at as f64,
            received: now(),
            tokens: credentials
                .members
                .into_iter()
                .map(|m| (m.member, m.token.map(|t| t.token).unwrap_or_default()))
                .collect(),
        }
    }
}

/// The job credential and the members' workload tokens; renewed at half their life.
#[derive(Clone)]
pub struct Credentials {
    held: Arc<Mutex<Held>>,
}

impl Credentials {
    pub fn new(first: JobCredentials) -> Self {
        Self {
            held: Arc::new(Mutex::new(Held::of(first))),
        }
    }

    fn with<T>(&self, look: impl FnOnce(&Held) -> T) -> T {
        look(
            &self
                .held
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }

    /// The members, in rank order (`rank-2` before `rank-10`).
    pub fn members(&self) -> Vec<String> {
        let mut members: Vec<String> = self.with(|h| h.tokens.keys().cloned().collect());
        members.sort_by(|a, b| (a.len(), a).cmp(&(b.len(), b)));
        members
    }

    pub fn credential(&self) -> String {
        self.with(|h| h.credential.clone())
    }

    pub fn token(&self, member: &str) -> String {
        self.with(|h| h.tokens.get(member).cloned().unwrap_or_default())
    }

    /// Renew at half the credentials' life until `stopping`; a failed renewal is retried in
    /// a few seconds while the current credentials still serve.
    pub fn keep_fresh(&self, control: &JobControl, stopping: &Flag) {
        loop {
            let (credential, due) = self.with(|h| {
                (
                    h.credential.clone(),
                    h.received + (h.expires_at - h.received) / 2.0,
                )
            });
            if stopping.wait(Duration::from_secs_f64((due - now()).max(0.0))) {
                return;
            }
            match control.renew(&credential) {
                Ok(fresh) => {
                    log::info!("credentials renewed (until {})", fresh.expires_at);
                    *self
                        .held
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner) = Held::of(fresh);
                }
                Err(Refused(why)) => {
                    log::warn!("credentials not renewed: {why}");
                    if stopping.wait(Duration::from_secs(5)) {
                        return;
                    }
                }
            }
        }
    }
}
