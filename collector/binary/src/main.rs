//! `tuneplane-collector`, the static binary that runs beside training jobs on execution hosts:
//! argument parsing and wiring only. This build reads JSONL metric files and TensorBoard
//! event files (`read`); the spool, the sender and the launch paths follow (issue 27).

mod logdir;
mod read;
mod sources;

use std::process::ExitCode;

const USAGE: &str = "\
usage: tuneplane-collector read PATH...
       tuneplane-collector --version

  read PATH...   print every decoded record of each path as one JSON object a line: a
                 JSONL metric file (*.jsonl), a TensorBoard log directory or event file;
                 damaged and incomplete records are said on standard error with their
                 file and line or offset, and skipped

Exit status: 0 when every path was read, 1 when one could not be, 2 for a usage error.";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let code = match args.first().map(String::as_str) {
        Some("read") if args.len() > 1 => read::read(&args[1..]),
        Some("-h" | "--help") => {
            println!("{USAGE}");
            0
        }
        Some("--version") => {
            println!("tuneplane-collector {}", env!("CARGO_PKG_VERSION"));
            0
        }
        Some("read") => {
            eprintln!("tuneplane-collector read: name at least one PATH\n\n{USAGE}");
            2
        }
        Some(other) => {
            eprintln!("tuneplane-collector: unknown command {other:?}\n\n{USAGE}");
            2
        }
        None => {
            eprintln!("{USAGE}");
            2
        }
    };
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}
