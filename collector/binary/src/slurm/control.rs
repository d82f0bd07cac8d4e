//! A Slurm job's collector's calls to control (`SlurmJobControl`).
//!
//! Transient failures (control restarting, Slurm slow to answer it) are retried with capped
//! exponential backoff and jitter (backon) for up to `PATIENCE`; a refusal is final and its
//! reason is what the job reports.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::contract::node::slurm_job_control_client::SlurmJobControlClient;
use crate::contract::node::{
    JobCredentials, JobNodeReport, JobNodeReportReply, JobStart, RedeemReply, RedeemRequest,
    RefuseRequest, RenewJobRequest, SpoolLeft,
};
use crate::rpc::Rpc;

/// How long one call is waited for.
const TIMEOUT: Duration = Duration::from_secs(30);
/// How long a call is retried while control answers transiently.
const PATIENCE: Duration = Duration::from_secs(120);
/// The drain's end is reported within Slurm's KillWait, not past it.
const REPORT_PATIENCE: Duration = Duration::from_secs(10);

/// Control refused the call for good (or never answered within the patience); why.
#[derive(Debug)]
pub struct Refused(pub String);

pub struct JobControl {
    rpc: Rpc,
}

impl JobControl {
    pub fn new(address: &str, ca_pem: &str, server_name: Option<&str>) -> Result<Self, String> {
        Ok(Self {
            rpc: Rpc::new(address, ca_pem.as_bytes().to_vec(), server_name, TIMEOUT)?,
        })
    }

    fn client(&self) -> SlurmJobControlClient<tonic::transport::Channel> {
        SlurmJobControlClient::new(self.rpc.channel.clone())
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
        F: Fn(SlurmJobControlClient<tonic::transport::Channel>, tonic::Request<Q>) -> Fut,
        Fut: std::future::Future<Output = Result<tonic::Response<R>, tonic::Status>>,
    {
        self.rpc
            .call((name, patience), message, credential, |r| {
                send(self.client(), r)
            })
            .map_err(|refused| Refused(format!("control refused {name}: {refused}")))
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

    /// Say how the drain ended: `left` batches in each member's spool, the tree of each
    /// spool left with batches to deliver; the attempt's state and a deliver-only
    /// credential per spool named.
    pub fn report(
        &self,
        credential: &str,
        left: &BTreeMap<String, u64>,
        detail: &str,
        spools: Vec<SpoolLeft>,
    ) -> Result<JobNodeReportReply, Refused> {
        let report = JobNodeReport {
            undelivered_batches: left.values().sum::<u64>() as i64,
            detail: detail.to_owned(),
            undelivered_by_member: left.iter().map(|(m, n)| (m.clone(), *n as i64)).collect(),
            spools,
        };
        self.call(
            ("Report", REPORT_PATIENCE),
            &report,
            Some(credential),
            |mut c, r| async move { c.report(r).await },
        )
    }
}
