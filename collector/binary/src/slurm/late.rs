//! Late delivery on a Slurm node. A drain that left batches in a member's spool (ingest
//! unreachable past it) names the spool's tree in its end report, and control answers with
//! a deliver-only credential for exactly those batches; it is kept in the spool
//! (`TOKEN`, 0600) and the job's output says how to deliver it by hand (`kept`). Every
//! collector of the user's later jobs on this host delivers, in the background, the spools
//! of its spool root that hold one (`background`), one at a time, and drops the credential
//! once the spool holds nothing more to deliver; control lists the node's report less what
//! the read models hold as delivered late. A credential that expired (control's delivery
//! TTL) is left, with the spool, to an admin.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;

use crate::contract::node::{MemberToken, SpoolLeft};
use crate::deliver::{expires_at, tree_of, Child};
use crate::run::Flags;

/// The deliver-only credential a spool left with batches keeps.
pub const TOKEN: &str = "delivery-token";
const LOG: &str = "delivery.log";
/// The largest credential file read.
const MAX_TOKEN: u64 = 8192;
/// How long one background `deliver` keeps trying while ingest does not take the batches.
const PATIENCE: u64 = 60;

/// Where and how the spools are delivered: this job's telemetry target.
#[derive(Clone)]
pub struct Reach {
    pub target: String,
    pub ca_file: PathBuf,
    pub server_name: String,
}

/// The tree of each member's spool the drain left batches in (`left`), for the report.
pub fn trees(
    spools: &BTreeMap<String, PathBuf>,
    left: &BTreeMap<String, u64>,
    mountinfo: &str,
) -> Vec<SpoolLeft> {
    let mut found = Vec::new();
    for (member, spool) in spools {
        if left.get(member).is_none_or(|n| *n == 0) {
            continue;
        }
        match tree_of(spool, mountinfo) {
            Ok(Some(tree)) => found.push(SpoolLeft {
                member: member.clone(),
                epoch: tree.epoch,
                root: tree.root,
                batches: i32::try_from(tree.batches).unwrap_or(i32::MAX),
            }),
            Ok(None) => {} // quarantined only: nothing a credential would deliver
            Err(why) => log::error!("cannot tell what the spool of {member} holds: {why}"),
        }
    }
    found
}

/// The credential, written whole (a new file renamed over the old: never through a link,
/// always 0600, whatever was there).
fn write_token(spool: &Path, token: &str) -> Result<(), String> {
    let path = spool.join(TOKEN);
    let partial = spool.join(format!("{TOKEN}.{}", std::process::id()));
    let _ = fs::remove_file(&partial);
    fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&partial)
        .and_then(|mut file| file.write_all(token.as_bytes()))
        .and_then(|()| fs::rename(&partial, &path))
        .map_err(|e| format!("cannot keep {}: {e}", path.display()))
}

/// The credential a spool keeps: a regular file of at most `MAX_TOKEN` bytes, opened
/// through no link and without waiting (a FIFO planted there never holds this up).
fn read_token(file: &Path) -> Result<String, String> {
    let failed = |e: std::io::Error| format!("{}: {e}", file.display());
    let opened = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(file)
        .map_err(failed)?;
    let meta = opened.metadata().map_err(failed)?;
    if !meta.is_file() || meta.len() > MAX_TOKEN {
        return Err(format!(
            "{} is not a credential this collector kept",
            file.display()
        ));
    }
    let mut text = String::new();
    std::io::Read::read_to_string(&mut std::io::Read::take(&opened, MAX_TOKEN), &mut text)
        .map_err(failed)?;
    Ok(text)
}

/// Keeps each credential control gave in its spool and says in the job's output how the
/// spool is delivered. A spool given none holds nothing a credential delivers: one an
/// earlier start of the job left there (its batches sent since) goes.
pub fn kept(delivery: &[MemberToken], spools: &BTreeMap<String, PathBuf>, reach: &Reach) {
    for (member, spool) in spools {
        if !delivery.iter().any(|given| &given.member == member) {
            let _ = fs::remove_file(spool.join(TOKEN));
        }
    }
    for given in delivery {
        let (Some(spool), Some(token)) = (spools.get(&given.member), given.token.as_ref()) else {
            continue;
        };
        if let Err(why) = write_token(spool, &token.token) {
            log::error!("{why}");
            continue;
        }
        let (name, shown) = (&reach.server_name, spool.display());
        println!(
            "tuneplane-collector: the batches left in {shown} ({}) are delivered by this user's \
             next Tuneplane job on this host, or now, once ingest is reachable: \
             tuneplane-collector deliver {shown} --target {} --ca-file {} --token-file {}{}",
            given.member,
            reach.target,
            reach.ca_file.display(),
            spool.join(TOKEN).display(),
            if name.is_empty() {
                String::new()
            } else {
                format!(" --server-name {name}")
            }
        );
    }
}

/// The spools below `root` (`<run>/<attempt>/<member>`) that hold a credential, but
/// `own` (this job's): through no link.
fn held(root: &Path, own: &BTreeSet<PathBuf>) -> Vec<PathBuf> {
    let below = |dir: &Path| -> Vec<PathBuf> {
        fs::read_dir(dir).map_or_else(
            |_| Vec::new(),
            |entries| {
                entries
                    .flatten()
                    .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                    .map(|e| e.path())
                    .collect()
            },
        )
    };
    let mut found: Vec<PathBuf> = below(root)
        .iter()
        .flat_map(|run| below(run))
        .flat_map(|attempt| below(&attempt))
        .filter(|spool| !own.contains(spool))
        .filter(|spool| fs::symlink_metadata(spool.join(TOKEN)).is_ok_and(|m| m.is_file()))
        .collect();
    found.sort();
    found
}

/// Delivers one spool left by an earlier job, until it holds nothing more to deliver.
fn deliver(spool: &Path, reach: &Reach, mountinfo: &str, flags: &Flags) -> Result<(), String> {
    let file = spool.join(TOKEN);
    let token = read_token(&file)?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
    if expires_at(&token).is_none_or(|at| at <= now) {
        return Err(format!(
            "its credential {} expired; an admin issues another \
                            (`tuneplane-collector deliver {}` says which)",
            file.display(),
            spool.display()
        ));
    }
    let program = std::env::current_exe().map_err(|e| format!("this program: {e}"))?;
    let code = Child {
        program: &program,
        spool,
        target: &reach.target,
        ca_file: &reach.ca_file,
        server_name: &reach.server_name,
        token_file: &file,
        patience: PATIENCE,
        log: &spool.join(LOG),
    }
    .run(&flags.stopping)?;
    if tree_of(spool, mountinfo)?.is_some() {
        return Err(format!(
            "deliver exited with {code}; see {}",
            spool.join(LOG).display()
        ));
    }
    let _ = fs::remove_file(&file);
    Ok(())
}

/// Starts delivering, in the background, the spools earlier jobs left below this user's
/// spool root; it ends once each was tried, or when `flags` stop.
pub fn background(
    root: PathBuf,
    own: BTreeSet<PathBuf>,
    reach: Reach,
    mountinfo: String,
    flags: Arc<Flags>,
) -> Option<JoinHandle<()>> {
    let spools = held(&root, &own);
    if spools.is_empty() {
        return None;
    }
    let work = move || {
        for spool in spools {
            if flags.stopping.is_set() {
                return;
            }
            match deliver(&spool, &reach, &mountinfo, &flags) {
                Ok(()) => log::info!("delivered late what {} held", spool.display()),
                Err(why) => log::warn!("{} not delivered late: {why}", spool.display()),
            }
        }
    };
    std::thread::Builder::new()
        .name("late".into())
        .spawn(work)
        .map_err(|e| log::error!("no thread to deliver left spools: {e}"))
        .ok()
}
