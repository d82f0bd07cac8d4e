//! `tuneplane-collector slurm-node`: the collector of one node of a Slurm job.
//!
//! Run by the job script on every node, from the artifact verified there, before any
//! training task starts. It makes itself undumpable, reads the job's ticket from its standard
//! input, refuses a spool root on a shared filesystem (telling control, which spends the
//! ticket for this node and start), redeems the ticket, and says `ready` with the attempt.
//! It then reads the sources its node's members own into one private spool each and sends
//! them with tokens held in memory only, renewed while the job runs (`node`).

mod control;
mod credentials;
mod late;
mod node;
mod root;
mod tasks;

use std::collections::HashMap;
use std::io::BufRead;
use std::path::PathBuf;

use clap::Args;

use crate::contract::node::JobStart;
use crate::settings::Settings;
use control::JobControl;

/// What the job script reads on the collector's standard output.
pub const READY: &str = "tuneplane-collector: ready";
pub const REFUSED: &str = "tuneplane-collector: refused: ";
const CONTROL_CA: &str = "TUNEPLANE_SLURM_CONTROL_CA";

/// `slurm-node --help`'s description.
pub const ABOUT: &str = "The collector of one node of a Slurm job, run by the job script \
control submits, from the collector artifact verified on the node, before any training task \
starts. It reads the job's one-time ticket from its standard input, refuses a spool root on a \
shared filesystem, redeems the ticket with control, prints `tuneplane-collector: ready \
attempt=N ...`, then reads the sources of this node's members (task i is rank-i) until \
SIGTERM, drains and reports what stayed spooled. Its credentials are held in memory only, in \
a process other processes of the job's user cannot read or trace.";

/// `slurm-node --help`'s closing part: the settings it reads, and its exit status.
pub const AFTER: &str = "Settings, from the environment:
  SLURM_JOB_ID, SLURM_NODEID, SLURM_RESTART_COUNT   set by Slurm in the job step
  TUNEPLANE_SLURM_CONTROL_CA          the CA of control's certificate, PEM (the job script)
  TUNEPLANE_TELEMETRY_SPOOL_BYTES     each spool's cap, unless control gives one (268435456)
  TUNEPLANE_TELEMETRY_DRAIN_SECONDS   how long the drain keeps sending, unless control gives \
it (30)
  TUNEPLANE_COLLECTOR_RETRY_SECONDS   how long a round of sending retries a failing batch (5)
  TUNEPLANE_COLLECTOR_MOUNT_TABLE     the mount table the spool root is judged from \
(/proc/self/mountinfo)
  TUNEPLANE_COLLECTOR_METRICS_TEXTFILE_DIR  node_exporter's textfile directory

Exit status: 0 when everything read was delivered, 2 when refused (the line \
`tuneplane-collector: refused: <why>` says why), 3 when batches are left in a spool.";

/// `slurm-node`'s flags.
#[derive(Args, Debug)]
pub struct SlurmNodeArgs {
    /// Control's address.
    #[arg(long, value_name = "HOST:PORT")]
    pub(crate) control: String,
    /// TLS name of control, if not HOST.
    #[arg(long = "server-name", default_value = "")]
    pub(crate) server_name: String,
    /// The launch's id.
    #[arg(long)]
    pub(crate) launch: i64,
    /// Node-local directory of the members' spools.
    #[arg(long = "spool-root", value_name = "DIR")]
    pub(crate) spool_root: PathBuf,
    /// The training tasks' working directory on this node.
    #[arg(long, value_name = "DIR")]
    pub(crate) workdir: PathBuf,
    /// The working directory is the launch's own (never made here).
    #[arg(long = "workdir-given")]
    pub(crate) workdir_given: bool,
    /// Once the ticket is redeemed and every spool opened, this file is made (what a
    /// startup probe looks for: `tuneplane-collector ready FILE`).
    #[arg(long = "ready-file", value_name = "FILE")]
    pub(crate) ready_file: Option<PathBuf>,
    /// DEBUG, INFO, WARNING or ERROR.
    #[arg(long, default_value = "INFO")]
    pub(crate) loglevel: String,
    /// Directories no source is read from besides the spools (a pod's ticket).
    #[arg(skip)]
    pub(crate) fenced: Vec<PathBuf>,
}

pub(crate) fn refused(reason: &str) -> u8 {
    println!("{REFUSED}{reason}");
    2
}

/// Not dumpable: its /proc files are root's and it cannot be traced, so a process of the
/// same user (a training task) can neither read its memory nor attach to it.
pub(crate) fn undumpable() -> Result<(), String> {
    nix::sys::prctl::set_dumpable(false)
        .map_err(|e| format!("cannot make the collector undumpable: {e}"))?;
    if !matches!(nix::sys::prctl::get_dumpable(), Ok(false)) {
        return Err("the collector is still dumpable after PR_SET_DUMPABLE 0".into());
    }
    // Not dumpable keeps new tracers out, not one attached before (to the shell that started
    // it, say): such a one would read the ticket and the tokens.
    let status = std::fs::read_to_string("/proc/self/status")
        .map_err(|e| format!("cannot read /proc/self/status: {e}"))?;
    match status
        .lines()
        .find_map(|l| l.strip_prefix("TracerPid:"))
        .map(str::trim)
    {
        Some("0") => Ok(()),
        Some(tracer) => Err(format!(
            "process {tracer} traces the collector; it holds no \
                                     credential while traced"
        )),
        None => Err("/proc/self/status names no TracerPid".into()),
    }
}

/// This node and start of the job, from what Slurm sets in a step's environment.
fn job_start(
    ticket: String,
    env: &HashMap<String, String>,
    host: &str,
) -> Result<JobStart, String> {
    let get = |name: &str| env.get(name).map(|v| v.trim()).filter(|v| !v.is_empty());
    let (Some(job_id), Some(node)) = (get("SLURM_JOB_ID"), get("SLURM_NODEID")) else {
        return Err("not run as a Slurm job step (SLURM_JOB_ID or SLURM_NODEID unset)".into());
    };
    let number = |name: &str, raw: &str| {
        raw.parse::<i32>()
            .map_err(|_| format!("{name} must be a whole number, got {raw:?}"))
    };
    Ok(JobStart {
        ticket,
        job_id: job_id.to_owned(),
        restart: number(
            "SLURM_RESTART_COUNT",
            get("SLURM_RESTART_COUNT").unwrap_or("0"),
        )?,
        node_index: number("SLURM_NODEID", node)?,
        hostname: host.to_owned(),
    })
}

/// The command: its exit status.
pub fn slurm_node(args: SlurmNodeArgs) -> u8 {
    let read = || {
        let mut ticket = String::new();
        std::io::stdin()
            .lock()
            .read_line(&mut ticket)
            .map(|_| ticket.trim().to_owned())
            .map_err(|e| format!("no ticket on standard input: {e}"))
    };
    start_node(&args, read, |ticket, env, host| {
        let ca = env.get(CONTROL_CA).cloned().unwrap_or_default();
        Ok((job_start(ticket, env, host)?, ca))
    })
}

/// What `slurm-node` and `kube-pod` share once each knows how to read its ticket and find its
/// start: made undumpable before the ticket (or anything secret) is read, the start
/// redeemed, the node run.
pub(crate) fn start_node(
    args: &SlurmNodeArgs,
    ticket: impl FnOnce() -> Result<String, String>,
    told: impl FnOnce(String, &HashMap<String, String>, &str) -> Result<(JobStart, String), String>,
) -> u8 {
    let host = nix::unistd::gethostname()
        .map(|h| h.to_string_lossy().into_owned())
        .unwrap_or_default();
    if let Err(why) = undumpable() {
        return refused(&format!("{host}: {why}")); // first: nothing secret is read before
    }
    if let Err(why) = crate::logging::start(&args.loglevel) {
        return refused(&why);
    }
    let env: HashMap<String, String> = std::env::vars().collect();
    let prepared = Settings::from_environ(&env).and_then(|settings| {
        let (start, ca) = told(ticket()?, &env, &host)?;
        let server_name = Some(args.server_name.as_str()).filter(|n| !n.is_empty());
        Ok((
            settings,
            start,
            JobControl::new(&args.control, &ca, server_name)?,
        ))
    });
    match prepared {
        Ok((settings, start, control)) => node::run(args, &settings, control, &start),
        Err(why) => refused(&format!("{host}: {why}")),
    }
}
