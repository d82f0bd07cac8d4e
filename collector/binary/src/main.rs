//! `tuneplane-collector`, the static binary that runs beside training jobs on execution
//! hosts: argument parsing and wiring only.

mod artifact;
mod buffers;
mod collect;
mod contract;
mod deliver;
mod failpoints;
mod follow;
mod integration;
mod kube;
mod logging;
mod node;
mod probe;
mod read;
mod rpc;
mod run;
mod runas;
mod send;
mod settings;
mod slurm;
mod sources;
mod spool;
mod textfile;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Read training telemetry beside a job and deliver it to ingest.
#[derive(Parser)]
#[command(name = "tuneplane-collector", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Collect and send until stopped (SIGTERM drains, then exits).
    #[command(args_override_self = true, long_about = run::ABOUT, after_long_help = run::AFTER)]
    Run(Box<run::RunArgs>),
    /// Print every decoded record of PATHs as JSON lines.
    ///
    /// Decode TensorBoard event files (a log directory or one file) and JSONL metric files
    /// (*.jsonl), one JSON object per record. Damaged and incomplete records are said on
    /// standard error with their file and line or offset, and skipped; the exit status is 1
    /// only for a path that cannot be read.
    ///
    /// With --summary, what `run` would collect from each PATH instead, without a spool:
    /// each series with its points and step and wall-time ranges, rich records and markers
    /// by tag and kind, refused records by reason, then a total line (as `tensorboard
    /// --inspect` summarises a log directory).
    Read {
        #[arg(required = true, value_name = "PATH")]
        paths: Vec<String>,
        /// Print one line per series and a total, not every record.
        #[arg(long)]
        summary: bool,
    },
    /// Validate an integration artifact; list who reads what.
    Check {
        /// The artifact (YAML or JSON).
        file: PathBuf,
    },
    /// A Slurm job's collector on one node (run by the job script that control submits).
    #[command(name = "slurm-node", long_about = slurm::ABOUT, after_long_help = slurm::AFTER)]
    SlurmNode(Box<slurm::SlurmNodeArgs>),
    /// A Kubernetes launch's collector in one pod (the native sidecar control adds).
    #[command(name = "kube-pod", long_about = kube::ABOUT, after_long_help = slurm::AFTER)]
    KubePod(Box<kube::KubePodArgs>),
    /// Exit 0 once FILE exists, else 1: the kube-pod sidecar's startup probe.
    Ready {
        /// The file `kube-pod --ready-file` makes.
        file: PathBuf,
    },
    /// The node agent of an execution host: enroll it, run the launches control assigns.
    #[command(long_about = node::ABOUT)]
    Node(node::NodeArgs),
    /// Check this host reaches ingest: DNS, TCP, TLS (chain and name) and, with a token,
    /// that ingest accepts it; each failure named with its fix.
    Probe(probe::ProbeArgs),
    /// Build or verify a collector artifact (manifest.json and the static binary, in a
    /// directory named by the manifest's sha256).
    Artifact {
        #[command(subcommand)]
        command: ArtifactCommand,
    },
    /// Deliver what a spool still holds after its collector stopped (late delivery), under
    /// a deliver-only credential for exactly those batches.
    #[command(after_long_help = deliver::AFTER)]
    Deliver(deliver::DeliverArgs),
    /// Look at a spool.
    Spool {
        #[command(subcommand)]
        command: SpoolCommand,
    },
}

#[derive(Subcommand)]
enum ArtifactCommand {
    /// Build the artifact of a static binary for --target in --out; prints its directory.
    Build {
        /// x86_64-unknown-linux-musl or aarch64-unknown-linux-musl.
        #[arg(long)]
        target: String,
        /// Where the artifact directory is made.
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// The static collector built for --target (default: this executable).
        #[arg(long, value_name = "FILE")]
        binary: Option<PathBuf>,
    },
    /// Check an artifact before running it: its name, manifest, files and target.
    Verify {
        directory: PathBuf,
        /// The host's target (default: this host's, from its machine name).
        #[arg(long)]
        target: Option<String>,
    },
}

fn artifact_command(command: ArtifactCommand) -> u8 {
    let done = match command {
        ArtifactCommand::Build {
            target,
            out,
            binary,
        } => std::env::current_exe()
            .map_err(|e| format!("cannot find this executable: {e}"))
            .and_then(|me| artifact::build(&target, &binary.unwrap_or(me), &out))
            .map(|directory| directory.display().to_string()),
        ArtifactCommand::Verify { directory, target } => {
            let host = target.map_or_else(|| artifact::host_target().map(str::to_owned), Ok);
            host.and_then(|host| artifact::verify(&directory, &host))
                .map(|manifest| {
                    let target = manifest["target"].as_str().unwrap_or_default();
                    format!("{} verified: {target}", directory.display())
                })
        }
    };
    match done {
        Ok(said) => {
            println!("{said}");
            0
        }
        Err(why) => {
            eprintln!("tuneplane-collector artifact: {why}");
            1
        }
    }
}

#[derive(Subcommand)]
enum SpoolCommand {
    /// Pending and quarantined batches, source positions, refusals (as JSON).
    Status {
        /// The member's spool directory.
        directory: PathBuf,
    },
}

fn spool_status(directory: &std::path::Path) -> u8 {
    match spool::status::status(directory) {
        Ok(found) => {
            println!(
                "{}",
                serde_json::to_string_pretty(&found).unwrap_or_default()
            );
            0
        }
        Err(why) => {
            eprintln!("tuneplane-collector spool status: {why}");
            1
        }
    }
}

fn main() -> ExitCode {
    let code = match Cli::parse().command {
        Command::Run(args) => run::run(*args),
        Command::Read { paths, summary } => u8::try_from(read::read(&paths, summary)).unwrap_or(1),
        Command::Artifact { command } => artifact_command(command),
        Command::SlurmNode(args) => slurm::slurm_node(*args),
        Command::KubePod(args) => kube::kube_pod(*args),
        Command::Ready { file } => kube::ready(&file),
        Command::Node(args) => node::node(args),
        Command::Probe(args) => probe::probe(&args),
        Command::Deliver(args) => deliver::deliver(&args),
        Command::Check { file } => integration::check(&file),
        Command::Spool {
            command: SpoolCommand::Status { directory },
        } => spool_status(&directory),
    };
    ExitCode::from(code)
}
