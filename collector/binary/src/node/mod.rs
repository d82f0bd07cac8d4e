//! `tuneplane-collector node`: the node agent of an execution host.
//!
//! `enroll` trades a one-time enrollment token for this node's credential; `run` beats to
//! Node control and runs each launch it is given, a collector beside each training command
//! (`agent`, `launch`). The agent is this same static binary: a host needs nothing else.

mod agent;
mod client;
mod host;
mod late;
mod launch;
mod pool;
mod prepare;
mod processes;
mod reports;
mod state;
mod training;
mod users;

#[cfg(test)]
mod testing;

use std::path::PathBuf;
use std::sync::Arc;

use clap::{Args, Subcommand};
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

use crate::spool::place::make_private;

/// `node --help`'s description.
pub const ABOUT: &str = "The node agent of an execution host. `enroll` trades a one-time \
enrollment token for this node's credential (kept in DIR/node.json, 0600). `run` beats to Node \
control and runs each launch it is given: it takes a run-as user of its own, verifies the \
collector artifact and the run's integration artifact, checks the spool grant, writes the \
collector's configuration and token file in DIR, makes the launch's working directory in WORK \
(USER's, 0700), starts the training command there as USER with a collector beside it, rewrites \
the token file on renewal, reports the launch's state, lets the collector drain at the end, \
then ends what the launch left running as USER and gives USER back. SIGTERM stops the agent: \
training commands get SIGTERM, collectors drain.

The run-as users are a pool (--run-as once per user): each running launch holds one user \
alone, so no launch reads another's working directory or signals its processes; launches \
beyond the pool wait in order for a free user, reported waiting with the reason. \
--share-run-as lets launches run at once as the same users: only where every launch of the \
node is one tenant's.

The agent runs as root (it switches to USER for training) and DIR is private to it: USER \
reads none of the node credential, workload tokens, trust bundle, spools or collector files. \
It refuses to run training as its own user unless given --allow-same-user.";

#[derive(Args, Debug)]
pub struct NodeArgs {
    #[command(subcommand)]
    command: NodeCommand,
}

#[derive(Subcommand, Debug)]
enum NodeCommand {
    /// Enroll this node with a one-time enrollment token.
    Enroll(EnrollArgs),
    /// Beat to Node control and run the launches it assigns.
    Run(RunArgs),
}

#[derive(Args, Debug)]
struct EnrollArgs {
    /// Node control's address.
    #[arg(long, value_name = "HOST:8443")]
    control: String,
    /// CA that signs the gateway certificate (`tuneplane-admin gateway-ca`).
    #[arg(long = "ca-file", value_name = "FILE")]
    ca_file: PathBuf,
    /// File holding the one-time enrollment token.
    #[arg(long = "token-file", value_name = "FILE")]
    token_file: PathBuf,
    /// TLS name to verify when it differs from --control's host.
    #[arg(long = "server-name", default_value = "")]
    server_name: String,
    /// Private directory for the node credential and launches.
    #[arg(long = "state-dir", value_name = "DIR")]
    state_dir: PathBuf,
}

#[derive(Args, Debug)]
struct RunArgs {
    /// As given to enroll.
    #[arg(long = "state-dir", value_name = "DIR")]
    state_dir: PathBuf,
    /// Where each launch's working directory is made (WORK/<launch>), outside the state
    /// directory; made 0711 when missing.
    #[arg(long = "work-root", value_name = "WORK")]
    work_root: PathBuf,
    /// An unprivileged user training commands run as (a name, or UID:GID[:GROUP,...]);
    /// repeat it for a pool. Each running launch holds a user of its own, which must run
    /// nothing else on this host: what runs as it when its launch ends is killed. Launches
    /// beyond the pool wait for a free user (default: the agent's own user, refused without
    /// --allow-same-user).
    #[arg(long = "run-as", value_name = "USER")]
    run_as: Vec<String>,
    /// Let launches run at once as one user (the least busy of the pool) instead of waiting
    /// for a user of their own: they can then read each other's working directories and
    /// signal each other's processes, so only where every launch is one tenant's.
    #[arg(long = "share-run-as")]
    share_run_as: bool,
    /// Let training run as the agent's own user, which can read the node credential and
    /// workload tokens: a single-user workstation only.
    #[arg(long = "allow-same-user")]
    allow_same_user: bool,
    /// Exit once N launches have been taken and all have ended.
    #[arg(long = "exit-after", value_name = "N")]
    exit_after: Option<usize>,
    /// Exit once no launch runs and what launches left in their spools is delivered (or
    /// refused a credential), for a host being drained.
    #[arg(long = "exit-when-delivered")]
    exit_when_delivered: bool,
    /// DEBUG, INFO, WARNING or ERROR.
    #[arg(long, default_value = "INFO")]
    loglevel: String,
}

fn enroll(args: &EnrollArgs) -> u8 {
    let local = (|| {
        make_private(&args.state_dir, "state directory").map_err(|e| e.0)?;
        let token = std::fs::read_to_string(&args.token_file)
            .map_err(|e| format!("cannot read {}: {e}", args.token_file.display()))?;
        let ca = std::fs::canonicalize(&args.ca_file)
            .map_err(|e| format!("CA {}: {e}", args.ca_file.display()))?;
        let host = nix::unistd::gethostname()
            .map(|h| h.to_string_lossy().into_owned())
            .unwrap_or_default();
        Ok::<_, String>((token.trim().to_owned(), ca.display().to_string(), host))
    })();
    let (token, ca, host) = match local {
        Ok(found) => found,
        Err(why) => {
            eprintln!("tuneplane-collector node enroll: {why}");
            return 2;
        }
    };
    let state = match client::enroll(&args.control, &ca, &token, &host, &args.server_name) {
        Ok(state) => state,
        Err(refused) => {
            eprintln!(
                "tuneplane-collector node enroll: refused by {}: {}",
                args.control, refused.message
            );
            return 1;
        }
    };
    if let Err(why) = state.save(&args.state_dir) {
        eprintln!("tuneplane-collector node enroll: {why}");
        return 2;
    }
    println!(
        "enrolled as {}; credential in {}",
        state.node_id,
        args.state_dir.join(state::STATE_FILE).display()
    );
    0
}

fn run(args: &RunArgs) -> u8 {
    if let Err(why) = crate::logging::start(&args.loglevel) {
        eprintln!("tuneplane-collector node run: {why}");
        return 2;
    }
    let names: Vec<Option<String>> = if args.run_as.is_empty() {
        vec![None]
    } else {
        args.run_as.iter().cloned().map(Some).collect()
    };
    let opened = users::resolve_pool(&names, args.allow_same_user).and_then(|users| {
        let live = Box::new(processes::live_uids);
        let pool = pool::UserPool::new(users, args.share_run_as, live)?;
        let host = host::open_host(&args.state_dir, &args.work_root, pool)?;
        let client = client::ControlClient::new(state::NodeState::load(&args.state_dir)?)?;
        Ok((host, client))
    });
    let (host, client) = match opened {
        Ok(opened) => opened,
        Err(why) => {
            eprintln!("tuneplane-collector node run: {why}");
            return 2;
        }
    };
    let names: Vec<&str> = host.users.users.iter().map(users::RunAs::name).collect();
    if args.share_run_as {
        log::info!(
            "training runs as {}, shared by launches (--share-run-as)",
            names.join(", ")
        );
    } else {
        log::info!(
            "training runs as {}, one launch per user: at most {} at once",
            names.join(", "),
            names.len()
        );
    }
    let mut agent = agent::Agent::new(host, client);
    let stopping = Arc::clone(&agent.stopping);
    match Signals::new([SIGTERM, SIGINT]) {
        Ok(mut signals) => {
            std::thread::spawn(move || {
                if signals.forever().next().is_some() {
                    stopping.set();
                }
            });
        }
        Err(e) => {
            eprintln!("tuneplane-collector node run: cannot handle SIGTERM: {e}");
            return 2;
        }
    }
    agent.run(args.exit_after, args.exit_when_delivered);
    0
}

/// The command: its exit status.
pub fn node(args: NodeArgs) -> u8 {
    match &args.command {
        NodeCommand::Enroll(enroll_args) => enroll(enroll_args),
        NodeCommand::Run(run_args) => run(run_args),
    }
}
