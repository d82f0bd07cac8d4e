//! A Slurm job's collector's calls to control (`SlurmJobControl`).
//!
//! Transient failures (control restarting, Slurm slow to answer it) are retried with capped
//! exponential backoff and jitter (backon) for up to `PATIENCE`; a refusal is final and its
//! reason is what the job reports.

use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

use backon::{BlockingRetryable, ExponentialBuilder};
use tonic::metadata::MetadataValue;
use tonic::transport::Channel;
use tonic::{Request, Response, Status};

use crate::contract::node::slurm_job_control_client::SlurmJobControlClient;
use crate::contract::node::{
    JobCredentials, JobNodeReport, JobStart, RedeemReply, RedeemRequest, RefuseRequest,
    RenewJobRequest,
};
use crate::contract::{code_name, retryable};

/// How long one call is waited for.
const TIMEOUT: Duration = Duration::from_secs(30);
/// How long a call is retried while control answers transiently.
const PATIENCE: Duration = Duration::from_secs(120);
/// The drain's end is reported within Slurm's KillWait, not past it.
const REPORT_PATIENCE: Duration = Duration::from_secs(10);

/// Control refused the call for good (or never answered within the patience); why.
#[derive(Debug)]
pub struct Refused(pub String);

type Client = SlurmJobControlClient<Channel>;

pub struct JobControl {
    runtime: tokio::runtime::Runtime,
    client: Client,
    jitter_seed: u64,
}

impl JobControl {
    pub fn new(address: &str, ca_pem: &str, server_name: Option<&str>) -> Result<Self, String> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start control's client: {e}"))?;
        let endpoint = crate::send::endpoint(address, ca_pem.as_bytes().to_vec(), server_name)?
            .timeout(TIMEOUT);
        let channel = {
            let _inside = runtime.enter();
            endpoint.connect_lazy()
        };
        let mut seed = [0u8; 8];
        getrandom::fill(&mut seed).map_err(|e| format!("no random seed: {e}"))?;
        Ok(Self {
            runtime,
            client: SlurmJobControlClient::new(channel),
            jitter_seed: u64::from_le_bytes(seed),
        })
    }

    fn call<Q, R, F, Fut>(
        &self,
        (name, patience): (&str, Duration),
        message: &Q,
        credential: Option<&str>,
        send: F,
    ) -> Result<R, Refused>
    where
        Q: Clone,
        F: Fn(Client, Request<Q>) -> Fut,
        Fut: Future<Output = Result<Response<R>, Status>>,
    {
        let bearer = match credential {
            Some(credential) => Some(
                MetadataValue::try_from(format!("Bearer {credential}"))
                    .map_err(|_| Refused("the job credential is not usable".into()))?,
            ),
            None => None,
        };
        let attempt = || {
            let mut request = Request::new(message.clone());
            request.set_timeout(TIMEOUT);
            if let Some(bearer) = &bearer {
                request
                    .metadata_mut()
                    .insert("authorization", bearer.clone());
            }
            self.runtime.block_on(send(self.client.clone(), request))
        };
        let backoff = ExponentialBuilder::default()
            .with_min_delay(Duration::from_millis(500))
            .with_max_delay(Duration::from_secs(10))
            .with_jitter()
            .with_jitter_seed(self.jitter_seed)
            .with_total_delay(Some(patience))
            .without_max_times();
        attempt
            .retry(backoff)
            .sleep(std::thread::sleep)
            .when(|status: &Status| retryable(status.code()))
            .notify(|status: &Status, wait| {
                log::warn!(
                    "control's {name} answered {}: {}; again in {wait:?}",
                    code_name(status.code()),
                    status.message()
                )
            })
            .call()
            .map(Response::into_inner)
            .map_err(|status| {
                Refused(format!(
                    "control refused {name}: {}: {}",
                    code_name(status.code()),
                    status.message()
                ))
            })
    }

    pub fn redeem(&self, start: &JobStart) -> Result<RedeemReply, Refused> {
        let request = RedeemRequest {
            start: Some(start.clone()),
        };
        self.call(
            ("Redeem", PATIENCE),
            &request,
            None,
            |mut c, r| async move { c.redeem(r).await },
        )
    }

    pub fn refuse(&self, start: &JobStart, reason: &str) -> Result<(), Refused> {
        let request = RefuseRequest {
            start: Some(start.clone()),
            reason: reason.to_owned(),
        };
        self.call(
            ("Refuse", PATIENCE),
            &request,
            None,
            |mut c, r| async move { c.refuse(r).await },
        )
        .map(|_| ())
    }

    pub fn renew(&self, credential: &str) -> Result<JobCredentials, Refused> {
        self.call(
            ("Renew", PATIENCE),
            &RenewJobRequest {},
            Some(credential),
            |mut c, r| async move { c.renew(r).await },
        )
    }

    /// Say how the drain ended: `left` batches in each member's spool; the attempt's state.
    pub fn report(
        &self,
        credential: &str,
        left: &BTreeMap<String, u64>,
        detail: &str,
    ) -> Result<String, Refused> {
        let report = JobNodeReport {
            undelivered_batches: left.values().sum::<u64>() as i64,
            detail: detail.to_owned(),
            undelivered_by_member: left.iter().map(|(m, n)| (m.clone(), *n as i64)).collect(),
        };
        self.call(
            ("Report", REPORT_PATIENCE),
            &report,
            Some(credential),
            |mut c, r| async move { c.report(r).await },
        )
        .map(|reply| reply.attempt_state)
    }
}
