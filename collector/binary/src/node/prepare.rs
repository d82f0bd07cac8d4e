//! What a launch needs before anything of it starts, checked and made in that order.
//!
//! A launch is refused (the reason reported to control) when the collector artifact does not
//! verify against its manifest and the digest launched, the run's integration artifact is
//! unusable or gives this member nothing to read, a source or the working directory resolves
//! into the node agent's state directory or the spool root, or the spool grant (private,
//! host-local, inside the configured root, no fallback) cannot be had. Relative source paths
//! are the training command's: they are read below its working directory, and with its
//! user's rights (the collector's `--read-as`).

use std::fs;
use std::path::{Path, PathBuf};

use super::host::{real, Host};
use super::state::write_private;
use super::users::RunAs;
use crate::contract::node::{CollectorConfig, Launch};
use crate::spool::mounts::check_filesystem;
use crate::spool::place::{make_private, member_dir};
use crate::spool::MemberKey;

mod workdir;

pub use workdir::wanted_user;
use workdir::{make_working_directory, working_directory};

/// The launch must not start; why.
#[derive(Debug)]
pub struct Refused(pub String);

/// What `prepare` made: the launch's private directory, the places and the collector's argv.
pub struct Prepared {
    pub directory: PathBuf,
    pub workdir: PathBuf,
    pub spool: PathBuf,
    pub collector: Vec<String>,
}

fn refused<T>(why: impl Into<String>) -> Result<T, Refused> {
    Err(Refused(why.into()))
}

fn check_artifact(config: &CollectorConfig) -> Result<PathBuf, Refused> {
    let place = PathBuf::from(&config.artifact_path);
    if place.file_name().and_then(|n| n.to_str()) != Some(config.artifact_digest.as_str()) {
        return refused(format!(
            "collector artifact {} is not the one launched ({})",
            place.display(),
            config.artifact_digest
        ));
    }
    let host = crate::artifact::host_target().map_err(Refused)?;
    crate::artifact::verify(&place, host)
        .map_err(|why| Refused(format!("collector artifact refused: {why}")))?;
    Ok(place)
}

/// The places no source or working directory may resolve into, by what they are.
fn fenced(host: &Host, spool_root: &Path) -> Vec<(&'static str, PathBuf)> {
    vec![
        ("the node agent's state directory", real(&host.state_dir)),
        ("the spool root", real(spool_root)),
    ]
}

fn check_place(what: &str, path: &Path, forbidden: &[(&str, PathBuf)]) -> Result<(), Refused> {
    let resolved = real(path);
    for (name, directory) in forbidden {
        if resolved.starts_with(directory) {
            return refused(format!(
                "{what} {} resolves to {}, inside {name} {}; training output is never read \
                 from there",
                path.display(),
                resolved.display(),
                directory.display()
            ));
        }
    }
    Ok(())
}

/// The member's sources, relative ones below `workdir`: none fenced, at least one.
fn sources(launch: &Launch, workdir: &Path, forbidden: &[(&str, PathBuf)]) -> Result<(), Refused> {
    let config = launch
        .collector
        .as_ref()
        .map(|c| c.integration_json.as_str());
    let integration =
        crate::integration::declared(config.unwrap_or_default(), "the run's integration artifact")
            .map_err(|why| Refused(format!("integration artifact refused: {why}")))?;
    let owned = integration.sources_of(&launch.member, workdir);
    if owned.is_empty() {
        return refused(format!(
            "member {:?} owns no source in the run's integration artifact",
            launch.member
        ));
    }
    for source in owned {
        check_place(&format!("source {}:", source.id), &source.path, forbidden)?;
    }
    Ok(())
}

/// The member's private spool below a private, host-local root; made if missing.
fn grant(root: &Path, owner: &MemberKey) -> Result<PathBuf, String> {
    let mountinfo = fs::read_to_string("/proc/self/mountinfo")
        .map_err(|e| format!("cannot read the mount table: {e}"))?;
    check_filesystem(root, &mountinfo).map_err(|e| e.0)?;
    make_private(root, "spool root").map_err(|e| e.0)?;
    let directory = member_dir(root, owner).map_err(|e| e.0)?;
    make_private(&directory, "spool directory").map_err(|e| e.0)?;
    Ok(directory)
}

fn text(path: &Path) -> String {
    path.display().to_string()
}

/// Verifies, grants and writes for the launch run as `run_as`. Touches nothing outside the
/// launch's places.
pub fn prepare(
    launch: &Launch,
    launch_dir: &Path,
    host: &Host,
    run_as: &RunAs,
) -> Result<Prepared, Refused> {
    let Some(config) = launch.collector.as_ref() else {
        return refused("the launch carries no collector configuration");
    };
    let artifact = check_artifact(config)?;
    let spool_root = PathBuf::from(&config.spool_root);
    let forbidden = fenced(host, &spool_root);
    let workdir = working_directory(launch, host, run_as, &forbidden)?;
    sources(launch, &workdir, &forbidden)?;
    let owner = MemberKey {
        run_id: launch.run_id.clone(),
        attempt: u32::try_from(launch.attempt).unwrap_or(0),
        member: launch.member.clone(),
    };
    let spool =
        grant(&spool_root, &owner).map_err(|why| Refused(format!("spool grant refused: {why}")))?;
    let written = (|| {
        make_private(launch_dir, "launch directory").map_err(|e| e.0)?;
        if launch.working_directory.is_empty() {
            make_working_directory(&workdir, run_as)?;
        }
        let token = launch
            .token
            .as_ref()
            .map(|t| t.token.as_str())
            .unwrap_or_default();
        write_private(
            &launch_dir.join("trust-bundle.pem"),
            config.trust_bundle_pem.as_bytes(),
        )?;
        write_private(&launch_dir.join("token"), token.as_bytes())?;
        write_private(
            &launch_dir.join("integration.json"),
            config.integration_json.as_bytes(),
        )
    })();
    written.map_err(Refused)?;
    let mut collector = vec![
        text(&artifact.join(crate::artifact::PROGRAM)),
        "run".into(),
        "--run".into(),
        launch.run_id.clone(),
        "--attempt".into(),
        launch.attempt.to_string(),
        "--member".into(),
        launch.member.clone(),
        "--integration".into(),
        text(&launch_dir.join("integration.json")),
        "--workdir".into(),
        text(&workdir),
        "--spool".into(),
        text(&spool),
    ];
    for (_, directory) in &forbidden {
        collector.extend(["--never-read".into(), text(directory)]);
    }
    collector.extend([
        "--target".into(),
        config.telemetry_target.clone(),
        "--ca-file".into(),
        text(&launch_dir.join("trust-bundle.pem")),
        "--token-file".into(),
        text(&launch_dir.join("token")),
    ]);
    if !config.server_name.is_empty() {
        collector.extend(["--server-name".into(), config.server_name.clone()]);
    }
    if !run_as.same_user {
        // By number: the static collector reads no directory service the host's NSS does.
        let mut groups = vec![run_as.id.gid];
        groups.extend(run_as.id.groups.iter().filter(|g| **g != run_as.id.gid));
        let groups: Vec<String> = groups.iter().map(u32::to_string).collect();
        collector.extend([
            "--read-as".into(),
            format!("{}:{}:{}", run_as.uid(), run_as.id.gid, groups.join(",")),
        ]);
    }
    let record = serde_json::json!({
        "launch": launch.launch_id, "run": launch.run_id, "attempt": launch.attempt,
        "member": launch.member, "command": launch.command, "collector": collector,
    });
    let record = serde_json::to_string_pretty(&record).unwrap_or_default();
    write_private(&launch_dir.join("launch.json"), record.as_bytes()).map_err(Refused)?;
    Ok(Prepared {
        directory: launch_dir.to_path_buf(),
        workdir,
        spool,
        collector,
    })
}

#[cfg(test)]
mod tests;
