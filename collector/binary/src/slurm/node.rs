//! One node's collectors of a Slurm job: the spool root checked before the ticket is
//! redeemed, a collector for each member of the node that owns a source, and the drain that
//! waits for the job's training tasks here to end first.

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

use super::control::{Credentials, JobControl, Refused};
use super::tasks::{wait_until_ended, TASKS_GRACE};
use super::{refused, SlurmNodeArgs, READY};
use crate::collect::Bounds;
use crate::contract::node::{CollectorConfig, JobStart, RedeemReply};
use crate::contract::MAX_BATCH_BYTES;
use crate::fence::Fence;
use crate::run::{collect_with, Config, Flag, Flags};
use crate::send::{Target, Token};
use crate::settings::Settings;
use crate::spool::mounts::check_filesystem_saying;
use crate::spool::place::{make_private, member_dir};
use crate::spool::{MemberKey, Spool};

const HINT: &str = "Launch with --spool-root on a node-local directory such as /tmp or the \
                    node's scratch disk (no other is tried)";

/// The collectors started so far; once `ending` is past, each is stopped as it starts.
#[derive(Default)]
struct Stops {
    flags: Mutex<Vec<Arc<Flags>>>,
    stopping: Flag,
}

impl Stops {
    fn add(&self, flags: Arc<Flags>) {
        let mut all = self
            .flags
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if self.stopping.is_set() {
            flags.stopping.set();
        }
        all.push(flags);
    }

    fn stop_all(&self) {
        let all = self
            .flags
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        self.stopping.set();
        for flags in all.iter() {
            flags.stopping.set();
        }
    }
}

/// Once told to end (SIGTERM, SIGINT), and once the job's tasks here have ended, stop the
/// collectors: each reads to the end and drains. From the start: a SIGTERM before the
/// collectors start stops each as it starts.
fn end_after_the_tasks(job_id: String) -> Result<Arc<Stops>, String> {
    let stops = Arc::new(Stops::default());
    let mut signals =
        Signals::new([SIGTERM, SIGINT]).map_err(|e| format!("cannot handle signals: {e}"))?;
    let ender = Arc::clone(&stops);
    thread::spawn(move || {
        if signals.forever().next().is_none() {
            return;
        }
        // The scan in a thread of its own: a hung /proc read must not keep the drain.
        let scan =
            thread::spawn(move || wait_until_ended(&job_id, TASKS_GRACE, Path::new("/proc")));
        let deadline = std::time::Instant::now() + TASKS_GRACE + Duration::from_secs(1);
        while !scan.is_finished() && std::time::Instant::now() < deadline {
            thread::sleep(Duration::from_millis(20));
        }
        let left = if scan.is_finished() {
            scan.join().ok()
        } else {
            None
        };
        if left.as_ref().is_none_or(|l| !l.is_empty()) {
            log::warn!(
                "training tasks {} still run {} s after the job's end began; reading to the \
                 end of the sources regardless",
                left.map_or("(?)".into(), |l| format!("{l:?}")),
                TASKS_GRACE.as_secs()
            );
        }
        ender.stop_all();
    });
    Ok(stops)
}

fn write_private(path: &Path, text: &str) -> Result<(), String> {
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .and_then(|mut file| file.write_all(text.as_bytes()))
        .map_err(|e| crate::fence::failed("cannot write", path, &e))
}

/// Each member of the node that owns a source, with its collector's configuration.
fn configs(
    args: &SlurmNodeArgs,
    settings: &Settings,
    mountinfo: &str,
    granted: &RedeemReply,
    credentials: &Credentials,
) -> Result<Vec<Config>, String> {
    let config = granted.collector.clone().unwrap_or_default();
    let root = &args.spool_root;
    if !args.workdir_given {
        make_private(&args.workdir, "working directory").map_err(|e| e.0)?;
    }
    let owners = crate::integration::from_json(&config.integration_json, "the run's artifact")?;
    let members = credentials.members();
    let key = |member: &str| MemberKey {
        run_id: granted.run_id.clone(),
        attempt: u32::try_from(granted.attempt).unwrap_or(0),
        member: member.to_owned(),
    };
    let first = members
        .first()
        .ok_or("control granted no member on this node")?;
    let place = member_dir(root, &key(first)).map_err(|e| e.0)?;
    let place = place.parent().unwrap_or(root);
    make_private(place, "spool directory").map_err(|e| e.0)?;
    let ca_file = place.join("telemetry-ca.pem");
    write_private(&ca_file, &config.trust_bundle_pem)?;
    let mut configs = Vec::new();
    for member in members {
        let sources = owners.sources_of(&member, &args.workdir);
        if sources.is_empty() {
            log::info!("{member} owns nothing to read");
            continue;
        }
        let owner = key(&member);
        let spool = member_dir(root, &owner).map_err(|e| e.0)?;
        drop(Spool::open(&spool, &owner, mountinfo).map_err(|e| e.0)?); // refused before ready
        let held = credentials.clone();
        configs.push(Config {
            owner,
            spool,
            mountinfo: mountinfo.to_owned(),
            target: target(&config, &ca_file, Arc::new(move || held.token(&member))),
            sources,
            bounds: Bounds {
                max_points: 10_000,
                max_bytes: MAX_BATCH_BYTES * 3 / 4,
                spool_bytes: u64::try_from(config.spool_bytes)
                    .ok()
                    .filter(|b| *b > 0)
                    .unwrap_or(settings.spool_bytes),
            },
            drain_seconds: u64::try_from(config.drain_seconds)
                .ok()
                .filter(|s| *s > 0)
                .unwrap_or(settings.drain_seconds),
            in_flight: 4,
            fence: Fence::of(std::slice::from_ref(root)),
            exit_when_idle: false,
        });
    }
    Ok(configs)
}

fn target(
    config: &CollectorConfig,
    ca_file: &Path,
    token: Arc<dyn Fn() -> String + Send + Sync>,
) -> Target {
    Target {
        address: config.telemetry_target.clone(),
        ca_file: ca_file.to_path_buf(),
        token: Token::Held(token),
        server_name: Some(config.server_name.clone()).filter(|n| !n.is_empty()),
    }
}

/// The spool root on a shared filesystem, or not private, is refused before the ticket is
/// redeemed (control is told, which spends the ticket for this node and start).
fn check_root(root: &Path, mountinfo: &str) -> Result<(), String> {
    check_filesystem_saying(root, mountinfo, HINT).map_err(|e| e.0)?;
    make_private(root, "spool root").map_err(|e| e.0)
}

pub fn run(args: &SlurmNodeArgs, settings: &Settings, control: JobControl, start: &JobStart) -> u8 {
    let host = &start.hostname;
    let stops = match end_after_the_tasks(start.job_id.clone()) {
        Ok(stops) => stops,
        Err(why) => return refused(&format!("{host}: {why}")),
    };
    let mountinfo = match std::fs::read_to_string(&settings.mount_table) {
        Ok(text) => text,
        Err(e) => {
            return refused(&format!(
                "{host}: {}",
                crate::fence::failed("mount table", &settings.mount_table, &e)
            ))
        }
    };
    if let Err(why) = check_root(&args.spool_root, &mountinfo) {
        let reason = format!("{host}: spool root refused: {why}");
        if let Err(Refused(refusal)) = control.refuse(start, &reason) {
            log::error!("the refusal did not reach control: {refusal}");
        }
        return refused(&reason);
    }
    let granted = match control.redeem(start) {
        Ok(granted) => granted,
        Err(Refused(why)) => return refused(&format!("{host}: {why}")),
    };
    let credentials = Credentials::new(granted.credentials.clone().unwrap_or_default());
    let configs = match configs(args, settings, &mountinfo, &granted, &credentials) {
        Ok(configs) => configs,
        Err(why) => return refused(&format!("{host}: {why}")),
    };
    println!(
        "{READY} attempt={} node={} members={}",
        granted.attempt,
        start.node_index,
        credentials.members().join(",")
    );
    let _ = std::io::stdout().flush();
    follow(configs, &credentials, Arc::new(control), start, &stops)
}

/// Run the collectors until told to end (`stops`), let them drain, and report what stayed
/// spooled.
fn follow(
    configs: Vec<Config>,
    credentials: &Credentials,
    control: Arc<JobControl>,
    start: &JobStart,
    stops: &Arc<Stops>,
) -> u8 {
    let renewing = {
        let (credentials, control, stops) =
            (credentials.clone(), Arc::clone(&control), Arc::clone(stops));
        thread::spawn(move || credentials.keep_fresh(&control, &stops.stopping))
    };
    let running: Vec<_> = configs
        .into_iter()
        .map(|config| {
            let flags = Arc::new(Flags::default());
            stops.add(Arc::clone(&flags));
            thread::spawn(move || {
                let ended = collect_with(&config, &flags);
                (config.owner.member, ended)
            })
        })
        .collect();
    let (mut left, mut cut_short) = (BTreeMap::new(), false);
    for thread in running {
        let Ok((member, ended)) = thread.join() else {
            continue;
        };
        match ended {
            Ok(ended) => {
                cut_short |= ended.cut_short;
                left.insert(member, ended.undelivered);
            }
            Err(why) => {
                log::error!("the collector of {member} did not run: {why}");
                cut_short = true;
            }
        }
    }
    let undelivered: u64 = left.values().sum();
    let detail = left
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(m, n)| format!("{m}: {n}"))
        .collect::<Vec<_>>()
        .join(", ");
    println!(
        "tuneplane-collector: node {} drained; {undelivered} batches left in the spool{}",
        start.node_index,
        if detail.is_empty() {
            String::new()
        } else {
            format!(" ({detail})")
        }
    );
    let _ = std::io::stdout().flush();
    if let Err(Refused(why)) = control.report(&credentials.credential(), &left, &detail) {
        log::error!("the drain's end was not reported: {why}");
    }
    stops.stopping.set();
    let _ = renewing.join();
    if undelivered == 0 && !cut_short {
        0
    } else {
        3
    }
}
