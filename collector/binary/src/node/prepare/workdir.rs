//! A launch's working directory: the one it names (existing, absolute, outside the work
//! root, its run-as user's, who the launch then waits for) or a new one of its own below the
//! work root, private to its run-as user.

use std::fs;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::{check_place, refused, Refused};
use crate::contract::node::Launch;
use crate::node::host::{real, Host};
use crate::node::users::RunAs;

/// The existing working directory the launch names, if it names one, and its owner.
fn given_directory(launch: &Launch) -> Result<Option<(PathBuf, u32)>, Refused> {
    if launch.working_directory.is_empty() {
        return Ok(None);
    }
    let workdir = PathBuf::from(&launch.working_directory);
    match fs::metadata(&workdir) {
        Ok(info) if workdir.is_absolute() && info.is_dir() => Ok(Some((workdir, info.uid()))),
        _ => refused(format!(
            "working directory {} is not an existing directory named by an absolute path",
            workdir.display()
        )),
    }
}

/// A working directory a launch names is never inside the work root: what is there is what
/// earlier launches made and left (taken back by the agent at their end), another tenant's
/// whatever its owner says now.
fn outside_work_root(workdir: &Path, work_root: &Path) -> Result<(), Refused> {
    let (resolved, root) = (real(workdir), real(work_root));
    if resolved.starts_with(&root) {
        return refused(format!(
            "working directory {} resolves to {}, inside the work root {}, where launches' \
             own directories are; a launch names a directory of its own or gets a new one",
            workdir.display(),
            resolved.display(),
            root.display()
        ));
    }
    Ok(())
}

/// The run-as user the launch must wait for: the owner of the working directory it names
/// (None: any user, it gets a new one).
pub fn wanted_user(launch: &Launch, host: &Host) -> Result<Option<RunAs>, Refused> {
    let Some((workdir, owner)) = given_directory(launch)? else {
        return Ok(None);
    };
    outside_work_root(&workdir, &host.work_root)?;
    let users = &host.users.users;
    match users.iter().find(|u| u.uid() == owner) {
        Some(user) => Ok(Some(user.clone())),
        None => {
            let names: Vec<&str> = users.iter().map(RunAs::name).collect();
            refused(format!(
                "working directory {} is uid {owner}'s, not a run-as user's ({})",
                workdir.display(),
                names.join(", ")
            ))
        }
    }
}

/// The launch's own (`<work root>/<launch>`) unless it names an existing one, which must be
/// its run-as user's.
pub(super) fn working_directory(
    launch: &Launch,
    host: &Host,
    run_as: &RunAs,
    forbidden: &[(&str, PathBuf)],
) -> Result<PathBuf, Refused> {
    let Some((workdir, owner)) = given_directory(launch)? else {
        let workdir = host.work_root.join(launch.launch_id.to_string());
        check_place("working directory", &workdir, forbidden)?;
        if fs::symlink_metadata(&workdir).is_ok() {
            return refused(format!(
                "working directory {} exists already; a launch gets a new one",
                workdir.display()
            ));
        }
        return Ok(workdir);
    };
    check_place("working directory", &workdir, forbidden)?;
    outside_work_root(&workdir, &host.work_root)?;
    if owner != run_as.uid() {
        return refused(format!(
            "working directory {} is uid {owner}'s, not the run-as user {}'s (uid {})",
            workdir.display(),
            run_as.name(),
            run_as.uid()
        ));
    }
    Ok(workdir)
}

/// Private to the launch's run-as user: no other launch's user enters it.
pub(super) fn make_working_directory(workdir: &Path, run_as: &RunAs) -> Result<(), String> {
    fs::DirBuilder::new()
        .mode(0o700)
        .create(workdir)
        .and_then(|()| fs::set_permissions(workdir, fs::Permissions::from_mode(0o700)))
        .map_err(|e| {
            format!(
                "cannot make the working directory {}: {e}",
                workdir.display()
            )
        })?;
    if !run_as.same_user {
        std::os::unix::fs::lchown(workdir, Some(run_as.uid()), Some(run_as.id.gid)).map_err(
            |e| {
                format!(
                    "cannot give {} to {}: {e}",
                    workdir.display(),
                    run_as.name()
                )
            },
        )?;
    }
    Ok(())
}
