//! `tuneplane-collector kube-pod`: the collector of one pod of a Kubernetes launch, run as
//! the pod's native sidecar (an init container that keeps running), and `ready`, its
//! startup probe.
//!
//! A Kubernetes launch is an Indexed Job: completion index `i` is rank `i`, one member per
//! pod. The sidecar starts before the training container, which the kubelet holds back
//! until the startup probe passes: so, as on a Slurm node, the job's ticket (a Secret mounted
//! in the sidecar alone) is redeemed for this index before any training code runs. The start
//! it names comes from the pod: the Job's uid (the downward API's
//! `batch.kubernetes.io/controller-uid` label) and `JOB_COMPLETION_INDEX`. Everything after
//! the redemption is the Slurm node's: the spool root judged from the mount table, one
//! private spool per member, tokens held in memory and renewed, the drain on SIGTERM, the
//! end reported.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use clap::Args;

use crate::contract::node::JobStart;
use crate::slurm::{start_node, SlurmNodeArgs};

/// The Job's uid, which control stored when it made the Job.
pub const JOB_UID: &str = "TUNEPLANE_KUBERNETES_JOB_UID";
/// Set by the Job controller in every container of an Indexed Job's pod.
pub const COMPLETION_INDEX: &str = "JOB_COMPLETION_INDEX";
/// The pod's name (the downward API's `metadata.name`).
pub const POD_NAME: &str = "TUNEPLANE_KUBERNETES_POD";
/// The artifact control names: the image must hold its manifest and run its binary.
pub const ARTIFACT_DIGEST: &str = "TUNEPLANE_COLLECTOR_ARTIFACT_DIGEST";
/// Where the collector image keeps its artifact's manifest.
const IMAGE_MANIFEST: &str = "/manifest.json";

/// `kube-pod --help`'s description.
pub const ABOUT: &str = "The collector of one pod of a Kubernetes launch, run as the pod's \
native sidecar from the collector image control names. It reads the job's one-time ticket from \
--ticket-file (a Secret mounted in this container only), checks that the image is the \
artifact control names (TUNEPLANE_COLLECTOR_ARTIFACT_DIGEST), refuses a spool root on a \
network filesystem, redeems the ticket with control for its completion index, makes --ready-file (the \
startup probe that holds the training container back), then reads the sources of its member \
(index i is rank-i) until SIGTERM, drains and reports what stayed spooled.";

/// `kube-pod`'s flags: the Slurm node's, and where the pod's files are.
#[derive(Args, Debug)]
pub struct KubePodArgs {
    #[command(flatten)]
    pub node: SlurmNodeArgs,
    /// The job's ticket (one line).
    #[arg(long = "ticket-file", value_name = "FILE")]
    pub ticket_file: PathBuf,
    /// The CA of control's certificate, PEM.
    #[arg(long = "control-ca-file", value_name = "FILE")]
    pub control_ca_file: PathBuf,
}

/// The image is the artifact control names, unless control names none.
fn image_checked(env: &HashMap<String, String>) -> Result<(), String> {
    let Some(digest) = env.get(ARTIFACT_DIGEST).filter(|d| !d.is_empty()) else {
        return Ok(());
    };
    let running =
        std::env::current_exe().map_err(|e| format!("cannot find this executable: {e}"))?;
    crate::artifact::verify_running(
        Path::new(IMAGE_MANIFEST),
        &running,
        digest,
        crate::artifact::host_target()?,
    )
}

/// This pod's start of the job, from what the pod's spec and the Job controller set.
fn pod_start(
    ticket: String,
    env: &HashMap<String, String>,
    host: &str,
) -> Result<JobStart, String> {
    let get = |name: &str| env.get(name).map(|v| v.trim()).filter(|v| !v.is_empty());
    let (Some(job_uid), Some(index)) = (get(JOB_UID), get(COMPLETION_INDEX)) else {
        return Err(format!(
            "not run in a pod of an Indexed Job that control made ({JOB_UID} or \
             {COMPLETION_INDEX} unset)"
        ));
    };
    let node_index = index
        .parse::<i32>()
        .map_err(|_| format!("{COMPLETION_INDEX} must be a whole number, got {index:?}"))?;
    Ok(JobStart {
        ticket,
        job_id: job_uid.to_owned(),
        restart: 0,
        node_index,
        hostname: get(POD_NAME).unwrap_or(host).to_owned(),
    })
}

fn read(path: &Path, what: &str) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("cannot read {what} {}: {e}", path.display()))
}

/// The command: its exit status (as `slurm-node`'s).
pub fn kube_pod(mut args: KubePodArgs) -> u8 {
    let ticket_file = args.ticket_file.clone();
    let ticket = move || read(&ticket_file, "the ticket").map(|t| t.trim().to_owned());
    // A source the training container links to the ticket is never read.
    if let Some(directory) = args.ticket_file.parent() {
        args.node.fenced.push(directory.to_path_buf());
    }
    let ca_file = args.control_ca_file.clone();
    start_node(&args.node, ticket, move |ticket, env, host| {
        image_checked(env)?;
        Ok((
            pod_start(ticket, env, host)?,
            read(&ca_file, "control's CA")?,
        ))
    })
}

/// `ready FILE`: 0 once the file exists, else 1 (the sidecar's startup probe).
pub fn ready(file: &Path) -> u8 {
    u8::from(!file.exists())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_start_is_the_jobs_uid_and_the_completion_index_and_nothing_else_is_taken() {
        let env: HashMap<String, String> = [
            (JOB_UID, "0f0e-uid"),
            (COMPLETION_INDEX, "3"),
            (POD_NAME, "tuneplane-7-3-abcde"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        let start = pod_start("t".into(), &env, "host").unwrap();
        assert_eq!(
            (start.job_id.as_str(), start.node_index, start.restart),
            ("0f0e-uid", 3, 0)
        );
        assert_eq!(start.hostname, "tuneplane-7-3-abcde");
        let mut bad = env.clone();
        bad.insert(COMPLETION_INDEX.into(), "x".into());
        assert!(pod_start("t".into(), &bad, "h")
            .unwrap_err()
            .contains("whole number"));
        bad.remove(JOB_UID);
        assert!(pod_start("t".into(), &bad, "h")
            .unwrap_err()
            .contains("Indexed Job"));
    }

    #[test]
    fn ready_answers_whether_the_file_is_there() {
        let file = std::env::temp_dir().join(format!("ready-{}", std::process::id()));
        assert_eq!(ready(&file), 1);
        std::fs::write(&file, "ready\n").unwrap();
        assert_eq!(ready(&file), 0);
        std::fs::remove_file(&file).unwrap();
    }
}
