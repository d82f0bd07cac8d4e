//! What the node agent's unit tests share: a place of their own, an artifact whose
//! collector is a shell script, a host, a launch, and a control that records reports.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use sha2::{Digest, Sha256};
use tonic::Code;

use super::client::Control;
use super::host::Host;
use super::pool::UserPool;
use super::users::RunAs;
use crate::contract::node::{CollectorConfig, Launch, LaunchReport, WorkloadToken};
use crate::rpc::Refused;
use crate::runas::Identity;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A fresh directory (resolved), removed when dropped.
pub struct Place(pub PathBuf);

impl Place {
    pub fn new(name: &str) -> Self {
        let mut random = [0u8; 4];
        getrandom::fill(&mut random).unwrap();
        let path = std::env::temp_dir().join(format!("tp-node-{name}-{}", hex(&random)));
        fs::create_dir_all(&path).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
        Self(fs::canonicalize(path).unwrap())
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// An artifact of this host's target whose collector is the shell `script`.
pub fn artifact(place: &Path, script: &str) -> PathBuf {
    let staging = place.join("staging");
    fs::create_dir_all(&staging).unwrap();
    let program = format!("#!/bin/sh\n{script}\n");
    let manifest = serde_json::json!({
        "files": {crate::artifact::PROGRAM: hex(&Sha256::digest(program.as_bytes()))},
        "format": crate::artifact::FORMAT,
        "target": crate::artifact::host_target().unwrap(),
    })
    .to_string();
    let directory = place
        .join("artifacts")
        .join(hex(&Sha256::digest(manifest.as_bytes())));
    fs::create_dir_all(&directory).unwrap();
    fs::write(directory.join(crate::artifact::MANIFEST), manifest).unwrap();
    let binary = directory.join(crate::artifact::PROGRAM);
    fs::write(&binary, program).unwrap();
    fs::set_permissions(&binary, fs::Permissions::from_mode(0o755)).unwrap();
    directory
}

/// The agent's own user, as `--allow-same-user` gives it.
pub fn same_user() -> RunAs {
    super::users::resolve(None, true).unwrap()
}

/// A user no one else on the host is: no passwd entry, a uid of this test's own.
pub fn stranger(offset: u32) -> RunAs {
    let uid = 3_900_000 + (std::process::id() % 10_000) * 10 + offset;
    RunAs {
        id: Identity {
            name: format!("uid {uid}"),
            uid,
            gid: uid,
            groups: vec![uid],
        },
        home: "/".into(),
        same_user: false,
    }
}

/// A host in `place`: `state/` (with its launches) and `work/`.
pub fn host(place: &Path, users: Vec<RunAs>) -> Host {
    let state = place.join("state");
    fs::create_dir_all(state.join("launches")).unwrap();
    for directory in [&state, &state.join("launches")] {
        fs::set_permissions(directory, fs::Permissions::from_mode(0o700)).unwrap();
    }
    fs::write(state.join("node.json"), "{}").unwrap();
    let work = place.join("work");
    fs::create_dir_all(&work).unwrap();
    fs::set_permissions(&work, fs::Permissions::from_mode(0o711)).unwrap();
    let live = Box::new(super::processes::live_uids);
    Host {
        state_dir: state,
        work_root: work,
        users: UserPool::new(users, false, live).unwrap(),
    }
}

/// Launch 7 of run-a/2, `member`, reading what `integration` declares.
pub fn launch(
    artifact: &Path,
    spool_root: &Path,
    integration: &serde_json::Value,
    member: &str,
) -> Launch {
    Launch {
        launch_id: 7,
        run_id: "run-a".into(),
        attempt: 2,
        member: member.into(),
        command: vec!["true".into()],
        collector: Some(CollectorConfig {
            telemetry_target: "gw.example:8444".into(),
            trust_bundle_pem: "CA PEM\n".into(),
            server_name: "gw.example".into(),
            spool_root: spool_root.display().to_string(),
            spool_bytes: 1 << 20,
            drain_seconds: 1,
            artifact_path: artifact.display().to_string(),
            artifact_digest: artifact.file_name().unwrap().to_string_lossy().into_owned(),
            integration_json: integration.to_string(),
        }),
        token: Some(WorkloadToken {
            token: "workload-token".into(),
            expires_at: 1 << 40,
        }),
        ..Launch::default()
    }
}

/// Sources of rank-0 (one relative, one absolute) and of rank-1.
pub fn integration() -> serde_json::Value {
    serde_json::json!({"version": 1, "sources": [
        {"id": "train", "kind": "jsonl", "path": "metrics.jsonl", "owner": "rank-0"},
        {"id": "tb", "kind": "tensorboard", "path": "/data/tb", "owner": "rank-0"},
        {"id": "eval", "kind": "jsonl", "path": "eval.jsonl", "owner": "rank-1"},
    ]})
}

/// Stands in for control: records reports; the first `unreachable` calls fail as an
/// unreachable control does, and `refusing` answers FAILED_PRECONDITION.
#[derive(Default)]
pub struct Recorder {
    pub received: Mutex<Vec<LaunchReport>>,
    pub unreachable: Mutex<usize>,
    pub refusing: bool,
}

impl Recorder {
    pub fn states(&self) -> Vec<i32> {
        self.received
            .lock()
            .unwrap()
            .iter()
            .map(|r| r.state)
            .collect()
    }
}

impl Control for Recorder {
    fn report(&self, report: &LaunchReport, _patience: Duration) -> Result<String, Refused> {
        let mut unreachable = self.unreachable.lock().unwrap();
        if *unreachable > 0 {
            *unreachable -= 1;
            return Err(Refused {
                code: Code::Unavailable,
                message: "control is away".into(),
            });
        }
        if self.refusing {
            return Err(Refused {
                code: Code::FailedPrecondition,
                message: "the attempt ended".into(),
            });
        }
        self.received.lock().unwrap().push(report.clone());
        Ok("running".into())
    }

    fn renew(&self, _launch_id: i64) -> Result<WorkloadToken, Refused> {
        panic!("no renewal expected");
    }
}
