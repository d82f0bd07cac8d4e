//! `tuneplane-collector`, the static binary that runs beside training jobs on execution
//! hosts: argument parsing and wiring only.

mod collect;
mod contract;
mod draft;
mod eventfile;
mod failpoints;
mod fence;
mod integration;
mod logdir;
mod logging;
mod read;
mod run;
mod send;
mod settings;
mod sources;
mod spool;

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
    #[command(args_override_self = true)]
    Run(Box<run::RunArgs>),
    /// Print every decoded record of PATHs as JSON lines.
    ///
    /// Decode TensorBoard event files (a log directory or one file) and JSONL metric files
    /// (*.jsonl), one JSON object per record. Damaged and incomplete records are said on
    /// standard error with their file and line or offset, and skipped; the exit status is 1
    /// only for a path that cannot be read.
    Read {
        #[arg(required = true, value_name = "PATH")]
        paths: Vec<String>,
    },
    /// Validate an integration artifact; list who reads what.
    Check {
        /// The artifact (YAML or JSON).
        file: PathBuf,
    },
    /// Look at a spool.
    Spool {
        #[command(subcommand)]
        command: SpoolCommand,
    },
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
        Command::Read { paths } => u8::try_from(read::read(&paths)).unwrap_or(1),
        Command::Check { file } => integration::check(&file),
        Command::Spool {
            command: SpoolCommand::Status { directory },
        } => spool_status(&directory),
    };
    ExitCode::from(code)
}
