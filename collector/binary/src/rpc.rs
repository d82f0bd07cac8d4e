//! Blocking calls to control over gRPC/TLS, shared by a Slurm job's collector
//! (`SlurmJobControl`) and the node agent (`NodeControl`).
//!
//! A call is retried while control answers transiently (restarting, overloaded, a broken
//! connection), with capped exponential backoff and jitter (backon), for up to the patience
//! the caller gives; any other answer is final and its reason is what the caller reports.
//! Calls may be made from any thread: each blocks on the runtime's own thread.

use std::future::Future;
use std::time::Duration;

use backon::{BlockingRetryable, ExponentialBuilder};
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
        let backoff = ExponentialBuilder::default()
            .with_min_delay(Duration::from_millis(500))
            .with_max_delay(Duration::from_secs(15))
            .with_jitter()
            .with_jitter_seed(self.jitter_seed)
            .with_total_delay(Some(patience))
            .without_max_times();
        attempt
            .retry(backoff)
            .sleep(std::thread::sleep)
            .when(|status: &Status| !patience.is_zero() && retryable(status.code()))
            .notify(|status: &Status, wait| {
                log::warn!(
                    "control's {name} answered {}: {}; again in {wait:?}",
                    code_name(status.code()),
                    status.message()
                )
            })
            .call()
            .map(Response::into_inner)
            .map_err(|status| Refused {
                code: status.code(),
                message: status.message().to_owned(),
            })
    }
}
