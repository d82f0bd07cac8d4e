//! `tuneplane-collector run`: its options, checked and completed from the settings into
//! what the collector needs. Sources come from flags; the spool defaults to the member's
//! directory inside `TUNEPLANE_TELEMETRY_SPOOL_ROOT`; `--never-read` fences directories no
//! source is read from (the node agent passes its state directory and the spool root).

mod collector;
mod flag;

pub use collector::{collect_with, ended_by, Flags};
pub use flag::Flag;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;

use crate::collect::fence::Fence;
use crate::collect::opener::Opener;
use crate::collect::{Bounds, SourceKind, SourceSpec, BATCH_POINTS};
use crate::contract::{MAX_BATCH_BYTES, MAX_BATCH_POINTS};
use crate::runas::Identity;
use crate::send::target::{Target, Token};
use crate::settings::{self, Settings};
use crate::sources::config::Setting;
use crate::sources::names::name_problem;
use crate::sources::repr::py_str;
use crate::spool::{place, MemberKey};

/// `run --help`'s description.
pub const ABOUT: &str = "Read the sources, spool sealed batches in a private host-local \
SQLite spool and send them to ingest over TLS. Nothing leaves the spool before ingest confirms \
Kafka holds it. SIGTERM reads the sources to their current end and keeps sending for \
TUNEPLANE_TELEMETRY_DRAIN_SECONDS, leaving the rest spooled.";

/// `run --help`'s closing part: the settings it reads, and its exit status.
pub const AFTER: &str = "Settings, from the environment (a flag given instead wins):
  TUNEPLANE_TELEMETRY_TARGET          ingest's host:port (--target)
  TUNEPLANE_TELEMETRY_TRUST_BUNDLE    the CA bundle of ingest's certificate (--ca-file)
  TUNEPLANE_TELEMETRY_SPOOL_ROOT      where each member's spool goes (--spool)
  TUNEPLANE_TELEMETRY_SPOOL_BYTES     the spool's cap; reading pauses while it is full \
(268435456)
  TUNEPLANE_TELEMETRY_DRAIN_SECONDS   how long SIGTERM keeps sending (30)
  TUNEPLANE_COLLECTOR_RETRY_SECONDS   how long a round of sending retries a failing batch (5)
  TUNEPLANE_COLLECTOR_READER_SECONDS  how long the --read-as reader may take to answer \
before it is replaced (10)
  TUNEPLANE_COLLECTOR_MOUNT_TABLE     the mount table the spool's filesystem is judged from \
(/proc/self/mountinfo)
  TUNEPLANE_COLLECTOR_METRICS_TEXTFILE_DIR  node_exporter's textfile directory \
(--metrics-textfile-dir)

Exit status: 0 when everything read was delivered, 2 for a usage or setting error, 3 when \
batches are left in the spool (or quarantined).";

/// `run`'s flags.
#[derive(Args, Debug)]
pub struct RunArgs {
    /// Run id.
    #[arg(long = "run")]
    run_id: String,
    /// Attempt number (1, 2, ...).
    #[arg(long)]
    attempt: u32,
    /// Member identity, e.g. rank-0.
    #[arg(long)]
    member: String,
    /// A JSONL metrics file (repeatable).
    #[arg(long = "source", value_name = "ID=FILE", value_parser = source_of::<false>)]
    sources: Vec<SourceSpec>,
    /// A TensorBoard log directory: every *tfevents* file below it (repeatable).
    #[arg(long = "tensorboard", value_name = "ID=LOGDIR", value_parser = source_of::<true>)]
    tensorboard: Vec<SourceSpec>,
    /// Integration artifact (YAML or JSON): reads the sources and rich channels whose
    /// owner is --member.
    #[arg(long, value_name = "FILE")]
    integration: Option<PathBuf>,
    /// The training command's working directory: relative source paths of --integration
    /// are read below it.
    #[arg(long, value_name = "DIR", default_value = ".")]
    workdir: PathBuf,
    /// A directory no source is read from, however its path resolves (symbolic links
    /// included); repeatable. The node agent passes its state directory and the spool root.
    #[arg(long = "never-read", value_name = "DIR")]
    never_read: Vec<PathBuf>,
    /// Open the sources with this user's rights, not the collector's: USER (from
    /// /etc/passwd) or UID:GID[:GROUP,...]. The node agent passes the training user.
    #[arg(long = "read-as", value_name = "USER")]
    read_as: Option<String>,
    /// This member's spool directory (default:
    /// TUNEPLANE_TELEMETRY_SPOOL_ROOT/<run>/<attempt>/<member>).
    #[arg(long)]
    spool: Option<PathBuf>,
    /// Ingest address host:port (default TUNEPLANE_TELEMETRY_TARGET).
    #[arg(long)]
    target: Option<String>,
    /// CA bundle that signs the ingest certificate (default TUNEPLANE_TELEMETRY_TRUST_BUNDLE).
    #[arg(long = "ca-file")]
    ca_file: Option<PathBuf>,
    /// File holding the workload token (read again for every send).
    #[arg(long = "token-file")]
    token_file: PathBuf,
    /// TLS name to verify when it differs from --target's host.
    #[arg(long = "server-name")]
    server_name: Option<String>,
    /// Points per batch (at most 50000).
    #[arg(long = "max-batch-points", default_value_t = BATCH_POINTS)]
    max_batch_points: usize,
    /// Batches on the wire at once.
    #[arg(long = "max-in-flight", default_value_t = 4)]
    max_in_flight: usize,
    /// node_exporter's textfile directory, for the spool's figures (default
    /// TUNEPLANE_COLLECTOR_METRICS_TEXTFILE_DIR).
    #[arg(long = "metrics-textfile-dir", value_name = "DIR")]
    metrics_textfile_dir: Option<PathBuf>,
    /// Exit once every source is read to its end and the spool is empty.
    #[arg(long = "exit-when-idle")]
    exit_when_idle: bool,
    /// DEBUG, INFO, WARNING or ERROR.
    #[arg(long, default_value = "INFO")]
    loglevel: String,
}

fn source_of<const TENSORBOARD: bool>(text: &str) -> Result<SourceSpec, String> {
    let (id, path) = text
        .split_once('=')
        .filter(|(id, path)| !id.is_empty() && !path.is_empty())
        .ok_or_else(|| format!("want ID=PATH, got {text:?}"))?;
    if let Some(problem) = name_problem(id) {
        return Err(format!("source id {problem}"));
    }
    let kind = if TENSORBOARD {
        SourceKind::TensorBoard
    } else {
        SourceKind::Jsonl
    };
    Ok(SourceSpec {
        id: id.to_owned(),
        path: PathBuf::from(path),
        kind,
        channel: None,
    })
}

/// What the collector runs with.
pub struct Config {
    pub owner: MemberKey,
    pub spool: PathBuf,
    pub mountinfo: String,
    pub target: Target,
    pub sources: Vec<SourceSpec>,
    /// The integration artifact's static config, sealed as the collector starts.
    pub artifact_config: Vec<Setting>,
    pub bounds: Bounds,
    pub drain_seconds: u64,
    /// How long one round of sending retries a failing batch.
    pub retry: Duration,
    pub in_flight: usize,
    pub fence: Fence,
    pub exit_when_idle: bool,
    /// Where the collector's figures are written for node_exporter (`textfile`).
    pub textfile_dir: Option<PathBuf>,
}

fn config(args: RunArgs, settings: Settings) -> Result<Config, String> {
    let mut sources: Vec<SourceSpec> = args.sources.into_iter().chain(args.tensorboard).collect();
    let mut artifact_config = Vec::new();
    if let Some(artifact) = &args.integration {
        // Named inside the agent's state directory (fenced for sources) it is the agent's;
        // through a link into it, refused.
        let integration = crate::integration::load(artifact, &Fence::of(&args.never_read))?;
        let owned = integration.sources_of(&args.member, &args.workdir);
        artifact_config = integration.config;
        if owned.is_empty() {
            return Err(format!(
                "member {} owns no source in {}",
                py_str(&args.member),
                artifact.display()
            ));
        }
        sources.extend(owned);
    }
    if sources.is_empty() {
        return Err("give --integration, --source or --tensorboard".into());
    }
    let owner = MemberKey {
        run_id: args.run_id,
        attempt: args.attempt,
        member: args.member,
    };
    let spool = match (args.spool, &settings.spool_root) {
        (Some(spool), _) => spool,
        (None, Some(root)) => place::member_dir(root, &owner).map_err(|e| e.0)?,
        (None, None) => return Err(format!("give --spool or set {}", settings::SPOOL_ROOT)),
    };
    let address = args
        .target
        .or(settings.target)
        .ok_or_else(|| format!("give --target or set {}", settings::TARGET))?;
    let ca_file = args
        .ca_file
        .or(settings.trust_bundle)
        .ok_or_else(|| format!("give --ca-file or set {}", settings::TRUST_BUNDLE))?;
    if !(1..=MAX_BATCH_POINTS).contains(&args.max_batch_points) {
        return Err(format!("--max-batch-points must be 1..{MAX_BATCH_POINTS}"));
    }
    let mountinfo = std::fs::read_to_string(&settings.mount_table)
        .map_err(|e| crate::collect::fence::failed("mount table", &settings.mount_table, &e))?;
    crate::failpoints::arm(settings.failpoints)
        .map_err(|why| format!("{} {why}", crate::failpoints::VARIABLE))?;
    let mut fence = Fence::of(&args.never_read);
    if let Some(user) = &args.read_as {
        // Forked here, before the collector starts any thread.
        let patience = Duration::from_secs(settings.reader_seconds);
        let opener = Opener::start(Identity::parse(user)?, patience)?;
        fence = fence.opened_by(Arc::new(opener));
    }
    Ok(Config {
        owner,
        spool,
        mountinfo,
        sources,
        artifact_config,
        target: Target {
            address,
            ca_file,
            token: Token::File(args.token_file),
            server_name: args.server_name,
        },
        bounds: Bounds {
            max_points: args.max_batch_points,
            max_bytes: MAX_BATCH_BYTES * 3 / 4,
            spool_bytes: settings.spool_bytes,
        },
        drain_seconds: settings.drain_seconds,
        retry: Duration::from_secs(settings.retry_seconds),
        in_flight: args.max_in_flight.max(1),
        fence,
        exit_when_idle: args.exit_when_idle,
        textfile_dir: args.metrics_textfile_dir.or(settings.metrics_textfile_dir),
    })
}

/// The command: its exit status.
pub fn run(args: RunArgs) -> u8 {
    if let Err(why) = crate::logging::start(&args.loglevel) {
        eprintln!("tuneplane-collector run: {why}");
        return 2;
    }
    let env = std::env::vars().collect();
    let prepared = Settings::from_environ(&env).and_then(|settings| config(args, settings));
    match prepared {
        Ok(config) => collector::collect(&config),
        Err(why) => {
            eprintln!("tuneplane-collector run: {why}");
            2
        }
    }
}
