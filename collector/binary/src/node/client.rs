//! The node agent's side of Node control: its calls, each with the node's credential.
//!
//! The credential is held behind a lock: the heartbeat may renew it while launch threads
//! report and renew their workload tokens.

use std::path::Path;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use tonic::transport::Channel;
use tonic::{Request, Response, Status};

use super::state::NodeState;
use crate::contract::node::node_control_client::NodeControlClient;
use crate::contract::node::{
    DeliveryRequest, EnrollRequest, HeartbeatReply, HeartbeatRequest, LaunchReport, RenewRequest,
    WorkloadToken,
};
use crate::rpc::{Refused, Rpc};

/// How long one call to control is waited for.
const TIMEOUT: Duration = Duration::from_secs(15);

type Client = NodeControlClient<Channel>;

/// What a launch asks of control: the port its runner and reports see (tests give a fake).
pub trait Control: Send + Sync {
    /// Reports until control has it, retrying transient failures for `patience`; the
    /// attempt's state control answers.
    fn report(&self, report: &LaunchReport, patience: Duration) -> Result<String, Refused>;
    /// A fresh workload token for the launch (no retry: the current one still serves).
    fn renew(&self, launch_id: i64) -> Result<WorkloadToken, Refused>;
}

fn rpc(control: &str, ca_file: &str, server_name: &str) -> Result<Rpc, String> {
    let pem = std::fs::read(ca_file).map_err(|e| format!("cannot read CA {ca_file}: {e}"))?;
    let name = Some(server_name).filter(|n| !n.is_empty());
    Rpc::new(control, pem, name, TIMEOUT)
}

pub struct ControlClient {
    rpc: Rpc,
    state: Mutex<NodeState>,
}

impl ControlClient {
    pub fn new(state: NodeState) -> Result<Self, String> {
        Ok(Self {
            rpc: rpc(&state.control, &state.ca_file, &state.server_name)?,
            state: Mutex::new(state),
        })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, NodeState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Keeps a renewed node credential, in memory and in the state directory.
    pub fn renewed(&self, token: String, state_dir: &Path) -> Result<(), String> {
        let mut state = self.state();
        state.token = token;
        state.save(state_dir)
    }

    fn call<Q, R, F, Fut>(
        &self,
        name: &str,
        patience: Duration,
        message: &Q,
        send: F,
    ) -> Result<R, Refused>
    where
        Q: Clone,
        F: Fn(Client, Request<Q>) -> Fut,
        Fut: std::future::Future<Output = Result<Response<R>, Status>>,
    {
        let token = self.state().token.clone();
        let client = NodeControlClient::new(self.rpc.channel.clone());
        self.rpc.call((name, patience), message, Some(&token), |r| {
            send(client.clone(), r)
        })
    }

    /// One heartbeat (no retry: the next beat is the retry).
    pub fn heartbeat(&self, running: Vec<i64>) -> Result<HeartbeatReply, Refused> {
        let request = HeartbeatRequest {
            running_launch_ids: running,
        };
        self.call(
            "Heartbeat",
            Duration::ZERO,
            &request,
            |mut c, r| async move { c.heartbeat(r).await },
        )
    }

    /// A deliver-only credential for what an ended launch left in its spool (no retry:
    /// the late delivery tries again later).
    pub fn delivery_token(&self, request: &DeliveryRequest) -> Result<WorkloadToken, Refused> {
        self.call(
            "IssueDeliveryToken",
            Duration::ZERO,
            request,
            |mut c, r| async move { c.issue_delivery_token(r).await },
        )
    }
}

impl Control for ControlClient {
    fn renew(&self, launch_id: i64) -> Result<WorkloadToken, Refused> {
        let request = RenewRequest { launch_id };
        self.call(
            "RenewWorkloadToken",
            Duration::ZERO,
            &request,
            |mut c, r| async move { c.renew_workload_token(r).await },
        )
    }

    fn report(&self, report: &LaunchReport, patience: Duration) -> Result<String, Refused> {
        self.call("ReportLaunch", patience, report, |mut c, r| async move {
            c.report_launch(r).await
        })
        .map(|reply| reply.attempt_state)
    }
}

/// Trades a one-time enrollment token for this node's credential.
pub fn enroll(
    control: &str,
    ca_file: &str,
    enrollment_token: &str,
    hostname: &str,
    server_name: &str,
) -> Result<NodeState, Refused> {
    let local = |message: String| Refused {
        code: tonic::Code::InvalidArgument,
        message,
    };
    let rpc = rpc(control, ca_file, server_name).map_err(local)?;
    let request = EnrollRequest {
        enrollment_token: enrollment_token.to_owned(),
        hostname: hostname.to_owned(),
        agent_version: env!("CARGO_PKG_VERSION").to_owned(),
    };
    let client = NodeControlClient::new(rpc.channel.clone());
    let reply = rpc.call(("Enroll", Duration::ZERO), &request, None, |r| {
        let mut c = client.clone();
        async move { c.enroll(r).await }
    })?;
    Ok(NodeState {
        control: control.to_owned(),
        ca_file: ca_file.to_owned(),
        node_id: reply.node_id,
        token: reply.node_token,
        server_name: server_name.to_owned(),
    })
}
