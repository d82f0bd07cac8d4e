//! Blocking calls to control over gRPC/TLS, shared by a Slurm job's collector
//! (`SlurmJobControl`) and the node agent (`NodeControl`).
//!
//! A call is retried while control answers transiently (restarting, overloaded, a broken
//! connection), with capped exponential backoff and jitter (backon), until the patience
//! the caller gives has passed on the clock since the first try: the time the tries take
//! counts, not only the waits between them. Any other answer is final and its reason is
//! what the caller reports. Calls may be made from any thread: each blocks on the
//! runtime's own thread.

use std::future::Future;
use std::time::{Duration, Instant};

use backon::{BackoffBuilder, ExponentialBuilder};
use tonic::metadata::MetadataValue;
use tonic::transport::Channel;
use tonic::{Code, Request, Response, Status};

use crate::contract::{code_name, retryable};

/// Control refused the call for good, or never answered within the patience.
#[derive(Debug)]
pub struct Refused {
    pub code: Code,
    pub message: String,
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", code_name(self.code), self.message)
    }
}

/// The first wait after a transient answer, and the longest (before jitter).
const MIN_WAIT: Duration = Duration::from_millis(500);
const MAX_WAIT: Duration = Duration::from_secs(15);

/// A channel to control and the runtime its calls block on.
pub struct Rpc {
    runtime: tokio::runtime::Runtime,
    pub channel: Channel,
    /// How long one call is waited for.
    timeout: Duration,
    jitter_seed: u64,
}

impl Rpc {
    /// A lazily connected channel to `address` trusting the CAs of `ca_pem`, each call
    /// waited for `timeout`.
    pub fn new(
        address: &str,
        ca_pem: Vec<u8>,
        server_name: Option<&str>,
        timeout: Duration,
    ) -> Result<Self, String> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start control's client: {e}"))?;
        let endpoint =
            crate::send::target::endpoint(address, ca_pem, server_name)?.timeout(timeout);
        let channel = {
            let _inside = runtime.enter();
            endpoint.connect_lazy()
        };
        let mut seed = [0u8; 8];
        getrandom::fill(&mut seed).map_err(|e| format!("no random seed: {e}"))?;
        Ok(Self {
            runtime,
            channel,
            timeout,
            jitter_seed: u64::from_le_bytes(seed),
        })
    }

    /// `send(request)` until it is answered, or refused for good, or `patience` is spent
    /// on transient answers (a zero patience: one try). `bearer` goes in `authorization`.
    pub fn call<Q, R, F, Fut>(
        &self,
        (name, patience): (&str, Duration),
        message: &Q,
        bearer: Option<&str>,
        send: F,
    ) -> Result<R, Refused>
    where
        Q: Clone,
        F: Fn(Request<Q>) -> Fut,
        Fut: Future<Output = Result<Response<R>, Status>>,
    {
        let bearer = match bearer {
            Some(credential) => Some(
                MetadataValue::try_from(format!("Bearer {credential}")).map_err(|_| Refused {
                    code: Code::Unauthenticated,
                    message: "the credential is not usable in a header".into(),
                })?,
            ),
            None => None,
        };
        let attempt = || {
            let mut request = Request::new(message.clone());
            request.set_timeout(self.timeout);
            if let Some(bearer) = &bearer {
                request
                    .metadata_mut()
                    .insert("authorization", bearer.clone());
            }
            self.runtime.block_on(send(request))
        };
        retrying((name, patience), self.jitter_seed, &Clock::real(), attempt)
            .map(Response::into_inner)
            .map_err(|status| Refused {
                code: status.code(),
                message: status.message().to_owned(),
            })
    }
}

/// Where the time of a retried call is read and waited: the machine's, or a test's.
struct Clock<'a> {
    now: &'a dyn Fn() -> Instant,
    sleep: &'a dyn Fn(Duration),
}

impl Clock<'static> {
    fn real() -> Self {
        Self {
            now: &Instant::now,
            sleep: &std::thread::sleep,
        }
    }
}

/// `attempt()` until it succeeds, fails for good, or `patience` has passed since the first
/// try began (a zero patience: one try). The waits between tries come from backon's capped
/// exponential backoff; none runs past that moment: the last try is made then.
fn retrying<R>(
    (name, patience): (&str, Duration),
    jitter_seed: u64,
    clock: &Clock<'_>,
    mut attempt: impl FnMut() -> Result<R, Status>,
) -> Result<R, Status> {
    let deadline = (clock.now)() + patience;
    let mut waits = ExponentialBuilder::default()
        .with_min_delay(MIN_WAIT)
        .with_max_delay(MAX_WAIT)
        .with_jitter()
        .with_jitter_seed(jitter_seed)
        .without_max_times()
        .build();
    loop {
        let status = match attempt() {
            Ok(answer) => return Ok(answer),
            Err(status) => status,
        };
        let left = deadline.saturating_duration_since((clock.now)());
        if left.is_zero() || !retryable(status.code()) {
            return Err(status);
        }
        let wait = waits.next().unwrap_or(MAX_WAIT).min(left);
        log::warn!(
            "control's {name} answered {}: {}; again in {wait:?}",
            code_name(status.code()),
            status.message()
        );
        (clock.sleep)(wait);
    }
}

#[cfg(test)]
mod tests;
