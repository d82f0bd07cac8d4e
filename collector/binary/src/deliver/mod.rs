//! `tuneplane-collector deliver SPOOL`: the batches a spool still holds after its collector
//! stopped (ingest unreachable past the drain), delivered late. Without a credential it says
//! what the spool holds and the deliver-only credential to ask for: one naming the spool's
//! epoch and the root of the tree of its sealed batches (`tree`), which an admin issues
//! (`tuneplane-admin delivery-token`). With it, each batch goes with its audit path, and
//! ingest admits those batches, byte for byte, and nothing else, whatever the attempt's
//! state. The list of batches is kept in the spool (`spool::manifest`), so a delivery cut
//! short goes on under the same credential.

mod child;
mod credential;
mod held;
mod settle;
pub mod tree;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::send::target::{Target, Token};
use crate::send::Sender;
use crate::settings::Settings;
use crate::sources::repr::py_str;
use crate::spool::manifest::Entry;
use crate::spool::{lock, Shared, Spool};

pub use child::Child;
pub use credential::{expires_at, Asked};
use held::manifest;
pub use held::tree_of;
use settle::{settle, Unsettled};

/// The metadata a delivered batch carries its audit path in.
pub const PROOF_HEADER: &str = "tuneplane-delivery-proof";

pub const AFTER: &str = "Without --token-file, prints what the spool holds and the \
credential to ask an admin for (`tuneplane-admin delivery-token ...`); --json prints it as \
JSON. With it, sends every batch the credential covers, keeps trying while ingest is \
unreachable for up to --patience seconds, and deletes each batch once ingest holds it.

Exit status: 0 when the spool holds nothing more to deliver, 2 for a usage error or a \
credential ingest refuses, 3 when batches are left (ingest unreachable) or ingest quarantined \
some (refused for good: `spool status` says why).";

#[derive(clap::Args, Debug)]
pub struct DeliverArgs {
    /// The member's spool directory.
    spool: PathBuf,
    /// Ingest's host:port.
    #[arg(long)]
    target: Option<String>,
    /// The CA bundle of ingest's certificate (PEM).
    #[arg(long = "ca-file")]
    ca_file: Option<PathBuf>,
    /// The deliver-only credential for this spool (from `tuneplane-admin delivery-token`).
    #[arg(long = "token-file")]
    token_file: Option<PathBuf>,
    /// TLS name to verify when it differs from --target's host.
    #[arg(long = "server-name")]
    server_name: Option<String>,
    /// How long to keep trying while ingest does not take the batches.
    #[arg(long, default_value_t = 600)]
    patience: u64,
    /// Print what the spool holds as JSON (without --token-file).
    #[arg(long)]
    json: bool,
}

fn deliver_with(
    args: &DeliverArgs,
    token_file: PathBuf,
    shared: &Shared,
    list: &[Entry],
    retry: Duration,
) -> Result<u8, String> {
    let leaves: Vec<tree::Hash> = list.iter().map(|e| e.leaf).collect();
    let (root, paths) = tree::paths(&leaves);
    let epoch = shared.get().epoch.clone();
    credential::matches(&token_file, &epoch, &root, list.len())?;
    let proofs: HashMap<u64, String> = list
        .iter()
        .zip(&paths)
        .enumerate()
        .map(|(index, (entry, path))| (entry.sequence, tree::render(index, path)))
        .collect();
    let target = Target {
        address: args
            .target
            .clone()
            .ok_or("give --target with --token-file")?,
        ca_file: args
            .ca_file
            .clone()
            .ok_or("give --ca-file with --token-file")?,
        token: Token::File(token_file),
        server_name: args.server_name.clone(),
    };
    let mut sender = Sender::new(shared.clone(), &target, 4)?.with_proofs(proofs);
    let stopping = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        signal_hook::flag::register(signal, Arc::clone(&stopping))
            .map_err(|e| format!("cannot handle signals: {e}"))?;
    }
    let deadline = Instant::now() + Duration::from_secs(args.patience);
    let stop = || stopping.load(Ordering::Relaxed) || Instant::now() >= deadline;
    let left = || shared.get().pending_count().unwrap_or(u64::MAX);
    let mut last = String::new();
    loop {
        match settle(&mut sender, shared) {
            Ok(()) => break,
            Err(Unsettled::Refused(why)) => return Err(why),
            Err(Unsettled::Unanswered(why)) if credential::refused(&why) || stop() => {
                eprintln!("tuneplane-collector deliver: asking ingest: {why}");
                return Ok(if stop() { 3 } else { 2 });
            }
            Err(Unsettled::Unanswered(why)) => {
                log::warn!("asking ingest for the member's checkpoints: {why}");
                std::thread::sleep(Duration::from_secs(1));
            }
        }
    }
    while left() > 0 && !stop() {
        match sender.run_once(retry, &stop) {
            Ok(_) => {}
            Err(e) if credential::refused(&e.0) => {
                eprintln!(
                    "tuneplane-collector deliver: ingest refused the credential: {}",
                    e.0
                );
                return Ok(2);
            }
            Err(e) => {
                log::warn!("ingest did not take the batches yet: {}", e.0);
                last = e.0;
                std::thread::sleep(Duration::from_millis(500));
            }
        }
        log::info!(
            "delivered {} of {} batches",
            sender.sent_batches,
            list.len()
        );
    }
    let left = left();
    if left == 0 {
        println!(
            "delivered {} batches ({} points) from {}; the spool holds nothing more to deliver",
            sender.sent_batches,
            sender.sent_points,
            args.spool.display()
        );
        let quarantined = shared.get().quarantined().map_or(0, |q| q.len());
        if quarantined > 0 {
            eprintln!(
                "tuneplane-collector deliver: {quarantined} batches are quarantined in {} \
                 (ingest refused them for good; `spool status` says why)",
                args.spool.display()
            );
            return Ok(3);
        }
        return Ok(0);
    }
    eprintln!(
        "tuneplane-collector deliver: {left} batches left in {} ({}); run it again later",
        args.spool.display(),
        if last.is_empty() {
            "stopped".to_owned()
        } else {
            last
        }
    );
    Ok(3)
}

fn deliver_spool(args: &DeliverArgs) -> Result<u8, String> {
    let settings = Settings::from_environ(&std::env::vars().collect())?;
    let mountinfo = std::fs::read_to_string(&settings.mount_table)
        .map_err(|e| crate::collect::fence::failed("mount table", &settings.mount_table, &e))?;
    crate::failpoints::arm(settings.failpoints.clone())
        .map_err(|why| format!("{} {why}", crate::failpoints::VARIABLE))?;
    let owner = crate::spool::status::owner(&args.spool).map_err(|e| e.0)?;
    let _held = lock::hold(&args.spool, &mountinfo).map_err(|e| e.0)?;
    let mut spool = Spool::open(&args.spool, &owner, &mountinfo).map_err(|e| e.0)?;
    let (list, points, pending) = manifest(&mut spool)?;
    if pending == 0 {
        println!("{}: nothing to deliver", args.spool.display());
        return Ok(0);
    }
    let Some(token_file) = args.token_file.clone() else {
        let leaves: Vec<tree::Hash> = list.iter().map(|e| e.leaf).collect();
        let asked = Asked {
            spool: &args.spool,
            owner: &owner,
            epoch: &spool.epoch,
            batches: list.len(),
            pending,
            points,
            root: tree::paths(&leaves).0,
        };
        println!(
            "{}",
            if args.json {
                asked.json()
            } else {
                asked.text()
            }
        );
        return Ok(0);
    };
    let shared = Shared::new(spool);
    let retry = Duration::from_secs(settings.retry_seconds);
    deliver_with(args, token_file, &shared, &list, retry)
}

/// The command: its exit status.
pub fn deliver(args: &DeliverArgs) -> u8 {
    if let Err(why) = crate::logging::start("INFO") {
        eprintln!("tuneplane-collector deliver: {why}");
        return 2;
    }
    match deliver_spool(args) {
        Ok(code) => code,
        Err(why) => {
            eprintln!(
                "tuneplane-collector deliver: {} {why}",
                py_str(&args.spool.display().to_string())
            );
            2
        }
    }
}
