//! Late delivery by the node agent. A launch whose collector left batches in its spool
//! (ingest unreachable past the drain) keeps a note of it in its directory (`NOTE`), written
//! before its final report. Once control has that report, the agent delivers them: it asks
//! the spool what it holds (`deliver --json`), gets a deliver-only credential for exactly
//! those batches from Node control (no more than the launch reported left), and runs
//! `deliver` under it with the launch's own collector program, as a child. One spool at a
//! time, on a thread of its own, so heartbeats go on (`Late`); a spool ingest does not take
//! yet is tried again later, each wait doubling up to `MAX_WAIT`. The note outlives an agent
//! restart. Once the spool holds nothing more to deliver the note goes, and the launch's end
//! is reported again with what is left: quarantined batches, or none.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tonic::Code;

use super::client::ControlClient;
use super::launch::undelivered_batches;
use super::reports;
use super::state::write_private;
use crate::contract::node::{DeliveryRequest, LaunchReport};
use crate::deliver::Child;
use crate::run::Flag;

mod schedule;

pub use schedule::Late;

/// The note a launch that left batches keeps in its directory until they are delivered.
pub const NOTE: &str = "late-delivery.json";
/// A note control refused a credential for: kept for the operator, not tried again.
const REFUSED: &str = "late-delivery.refused.json";
const TOKEN: &str = "delivery-token";
const LOG: &str = "delivery.log";
/// How long one `deliver` keeps trying while ingest does not take the batches.
const PATIENCE: u64 = 120;
/// Node control's refusals that stand: any other (unavailable, busy, a node token being
/// renewed) is tried again later.
const FINAL: [Code; 4] = [
    Code::FailedPrecondition,
    Code::InvalidArgument,
    Code::PermissionDenied,
    Code::NotFound,
];

/// What a launch left, and how its end was reported.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Left {
    pub spool: PathBuf,
    /// The launch's collector program, which wrote the spool.
    pub program: PathBuf,
    pub target: String,
    #[serde(default)]
    pub server_name: String,
    pub state: i32,
    pub exit_code: i32,
    /// The end's detail, without what the spool held.
    pub detail: String,
    pub batches: i64,
}

/// Keeps the note in `launch_dir` (whole or not at all).
pub fn keep(launch_dir: &Path, left: &Left) -> Result<(), String> {
    let text = serde_json::to_string_pretty(left).unwrap_or_default();
    write_private(&launch_dir.join(NOTE), text.as_bytes())
}

fn load(launch_dir: &Path) -> Result<Left, String> {
    let path = launch_dir.join(NOTE);
    let text = fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_str(&text)
        .map_err(|e| format!("{} is not a late-delivery note: {e}", path.display()))
}

/// How one try went.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    Delivered,
    /// Tried again later: why not now.
    Later(String),
    /// Control gives no credential for it: left to the operator.
    Refused(String),
}

/// What the spool holds to deliver (None: nothing), as `deliver --json` says it.
fn asked(launch_id: i64, left: &Left) -> Result<Option<DeliveryRequest>, String> {
    let done = Command::new(&left.program)
        .arg("deliver")
        .arg(&left.spool)
        .arg("--json")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{} could not start: {e}", left.program.display()))?;
    let said = String::from_utf8_lossy(&done.stdout);
    if !done.status.success() {
        return Err(String::from_utf8_lossy(&done.stderr).trim().to_owned());
    }
    if said.trim_end().ends_with("nothing to deliver") {
        return Ok(None);
    }
    let held: serde_json::Value =
        serde_json::from_str(&said).map_err(|e| format!("deliver --json said {said:?}: {e}"))?;
    Ok(Some(DeliveryRequest {
        launch_id,
        epoch: held["epoch"].as_str().unwrap_or_default().to_owned(),
        root: held["root"].as_str().unwrap_or_default().to_owned(),
        batches: held["batches"]
            .as_i64()
            .and_then(|n| i32::try_from(n).ok())
            .unwrap_or(0),
    }))
}

/// Runs `deliver` under the credential in `token`, its output in the launch's delivery
/// log; SIGTERM when the agent stops. Its exit status.
fn run_deliver(dir: &Path, left: &Left, token: &Path, stopping: &Flag) -> Result<i32, String> {
    Child {
        program: &left.program,
        spool: &left.spool,
        target: &left.target,
        ca_file: &dir.join("trust-bundle.pem"),
        server_name: &left.server_name,
        token_file: token,
        patience: PATIENCE,
        log: &dir.join(LOG),
    }
    .run(stopping)
}

/// One try at delivering what launch `launch_id` (directory `dir`) left.
pub fn deliver_once(
    client: &ControlClient,
    launch_id: i64,
    dir: &Path,
    stopping: &Flag,
) -> Outcome {
    let left = match load(dir) {
        Ok(left) => left,
        Err(why) => return Outcome::Refused(why),
    };
    let request = match asked(launch_id, &left) {
        Ok(Some(request)) => request,
        Ok(None) => return delivered(client, launch_id, dir, &left),
        Err(why) => return Outcome::Later(why),
    };
    let token = match client.delivery_token(&request) {
        Ok(token) => token,
        Err(refused) if FINAL.contains(&refused.code) => {
            let _ = fs::rename(dir.join(NOTE), dir.join(REFUSED));
            return Outcome::Refused(refused.message);
        }
        Err(refused) => return Outcome::Later(format!("Node control: {}", refused.message)),
    };
    let file = dir.join(TOKEN);
    if let Err(why) = write_private(&file, token.token.as_bytes()) {
        return Outcome::Later(why);
    }
    let ran = run_deliver(dir, &left, &file, stopping);
    let _ = fs::remove_file(&file); // asked for again at the next try
    match ran {
        Ok(0) => delivered(client, launch_id, dir, &left),
        Ok(code) => Outcome::Later(format!(
            "deliver exited with {code} (see {})",
            dir.join(LOG).display()
        )),
        Err(why) => Outcome::Later(why),
    }
}

/// The spool holds nothing more to deliver: the note goes, and the end is reported again
/// with what is left.
fn delivered(client: &ControlClient, launch_id: i64, dir: &Path, left: &Left) -> Outcome {
    let quarantined = undelivered_batches(&left.spool);
    // Control keeps the end's detail and adds this to it.
    let mut detail = format!(
        "the {} batches left in the spool {} were delivered late",
        left.batches,
        left.spool.display()
    );
    if quarantined > 0 {
        detail.push_str(&format!(", {quarantined} of them quarantined by ingest"));
    }
    let report = LaunchReport {
        launch_id,
        state: left.state,
        exit_code: left.exit_code,
        detail,
        undelivered_batches: quarantined,
    };
    // Sent (or kept to be sent again) before the note goes: an agent dying between finds
    // the spool empty and reports again, to the same effect.
    reports::send(client, dir, &report, Duration::from_secs(30));
    let _ = fs::remove_file(dir.join(NOTE));
    Outcome::Delivered
}
