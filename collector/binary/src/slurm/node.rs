//! One node's collectors of a Slurm job: the spool root checked before the ticket is
//! redeemed, a collector for each member of the node that owns a source, and the drain that
//! waits for the job's training tasks here to end first.

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use super::control::{JobControl, Refused};
use super::credentials::Credentials;
use super::late::{self, Reach};
use super::root::user_root;
use super::tasks::{end_after_the_tasks, Stops};
use super::{refused, SlurmNodeArgs, READY};
use crate::collect::fence::Fence;
use crate::collect::{Bounds, BATCH_POINTS};
use crate::contract::node::{CollectorConfig, JobStart, RedeemReply};
use crate::contract::MAX_BATCH_BYTES;
use crate::run::{collect_with, Config, Flags};
use crate::send::target::{Target, Token};
use crate::settings::Settings;
use crate::spool::place::{make_private, member_dir};
use crate::spool::{MemberKey, Spool};

fn write_private(path: &Path, text: &str) -> Result<(), String> {
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .and_then(|mut file| file.write_all(text.as_bytes()))
        .map_err(|e| crate::collect::fence::failed("cannot write", path, &e))
}

/// Each member of the node that owns a source, with its collector's configuration.
fn configs(
    args: &SlurmNodeArgs,
    root: &Path,
    settings: &Settings,
    mountinfo: &str,
    granted: &RedeemReply,
    credentials: &Credentials,
) -> Result<Vec<Config>, String> {
    let config = granted.collector.clone().unwrap_or_default();
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
            artifact_config: owners.config.clone(),
            bounds: Bounds {
                max_points: BATCH_POINTS,
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
            retry: Duration::from_secs(settings.retry_seconds),
            in_flight: 4,
            fence: Fence::of(
                &[args.spool_root.clone(), root.to_path_buf()]
                    .into_iter()
                    .chain(args.fenced.iter().cloned())
                    .collect::<Vec<_>>(),
            ),
            exit_when_idle: false,
            textfile_dir: settings.metrics_textfile_dir.clone(),
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
                crate::collect::fence::failed("mount table", &settings.mount_table, &e)
            ))
        }
    };
    let root = match user_root(&args.spool_root, &mountinfo) {
        Ok(root) => root,
        Err(why) => {
            let reason = format!("{host}: spool root refused: {why}");
            if let Err(Refused(refusal)) = control.refuse(start, &reason) {
                log::error!("the refusal did not reach control: {refusal}");
            }
            return refused(&reason);
        }
    };
    let granted = match control.redeem(start) {
        Ok(granted) => granted,
        Err(Refused(why)) => return refused(&format!("{host}: {why}")),
    };
    let credentials = Credentials::new(granted.credentials.clone().unwrap_or_default());
    let configs = match configs(args, &root, settings, &mountinfo, &granted, &credentials) {
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
    if let Some(ready) = &args.ready_file {
        if let Err(why) = write_private(ready, "ready\n") {
            return refused(&format!("{host}: {why}"));
        }
    }
    let held = Held {
        spools: configs
            .iter()
            .map(|c| (c.owner.member.clone(), c.spool.clone()))
            .collect(),
        reach: configs.first().map(|c| Reach {
            target: c.target.address.clone(),
            ca_file: c.target.ca_file.clone(),
            server_name: c.target.server_name.clone().unwrap_or_default(),
        }),
        root,
        mountinfo,
    };
    follow(
        configs,
        &credentials,
        Arc::new(control),
        start,
        &stops,
        &held,
    )
}

/// This job's spools on the node, below the user's spool root, and how they reach ingest.
struct Held {
    spools: BTreeMap<String, PathBuf>,
    reach: Option<Reach>,
    root: PathBuf,
    mountinfo: String,
}

/// Run the collectors until told to end (`stops`), let them drain, and report what stayed
/// spooled.
fn follow(
    configs: Vec<Config>,
    credentials: &Credentials,
    control: Arc<JobControl>,
    start: &JobStart,
    stops: &Arc<Stops>,
    held: &Held,
) -> u8 {
    let renewing = {
        let (credentials, control, stops) =
            (credentials.clone(), Arc::clone(&control), Arc::clone(stops));
        thread::spawn(move || credentials.keep_fresh(&control, &stops.stopping))
    };
    let earlier = held.reach.clone().and_then(|reach| {
        let flags = Arc::new(Flags::default());
        stops.add(Arc::clone(&flags));
        let own = held.spools.values().cloned().collect();
        let (root, mountinfo) = (held.root.clone(), held.mountinfo.clone());
        late::background(root, own, reach, mountinfo, flags)
    });
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
    let trees = late::trees(&held.spools, &left, &held.mountinfo);
    match control.report(&credentials.credential(), &left, &detail, trees) {
        Ok(reply) => {
            if let Some(reach) = &held.reach {
                late::kept(&reply.delivery, &held.spools, reach);
            }
        }
        Err(Refused(why)) => log::error!("the drain's end was not reported: {why}"),
    }
    let _ = std::io::stdout().flush();
    stops.stopping.set();
    let _ = renewing.join();
    if let Some(earlier) = earlier {
        let _ = earlier.join();
    }
    if undelivered == 0 && !cut_short {
        0
    } else {
        3
    }
}
