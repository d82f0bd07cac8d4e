//! This node's places and its training users, checked once when the agent starts.
//!
//! The state directory (the node credential, every launch's token, configuration and logs)
//! is private to the agent's user. Working directories live under a separate work root,
//! outside it, which every training user can pass through (not list) to reach its own
//! working directory and nothing of the agent's.

use std::fs;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

use super::pool::UserPool;
use super::state::STATE_FILE;
use super::users::RunAs;
use crate::spool::place::make_private;

/// This node's places: the agent's private state, where working directories go, and the
/// users training runs as.
pub struct Host {
    pub state_dir: PathBuf,
    pub work_root: PathBuf,
    pub users: UserPool,
}

/// `path` with every link resolved, as far as it exists; the rest appended as given, `..`
/// applied after the links before it (`os.path.realpath`'s answer).
pub fn real(path: &Path) -> PathBuf {
    let mut pending: Vec<std::ffi::OsString> = Vec::new();
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().unwrap_or_default().join(path)
    };
    for part in absolute.components().rev() {
        match part {
            Component::Normal(name) => pending.push(name.to_os_string()),
            Component::ParentDir => pending.push("..".into()),
            _ => {}
        }
    }
    let (mut out, mut hops) = (PathBuf::from("/"), 0);
    while let Some(part) = pending.pop() {
        if part == ".." {
            out.pop();
            continue;
        }
        let next = out.join(&part);
        match fs::read_link(&next) {
            Ok(target) if hops < 40 => {
                hops += 1;
                if target.is_absolute() {
                    out = PathBuf::from("/");
                }
                for piece in target.components().rev() {
                    match piece {
                        Component::Normal(name) => pending.push(name.to_os_string()),
                        Component::ParentDir => pending.push("..".into()),
                        _ => {}
                    }
                }
            }
            _ => out = next, // not a link, missing, or too many links: taken as it is
        }
    }
    out
}

fn mode_of(info: &fs::Metadata) -> u32 {
    info.mode() & 0o7777
}

fn euid() -> u32 {
    nix::unistd::geteuid().as_raw()
}

/// Makes the work root (0711: others pass through to their own directory, list nothing) or
/// checks an existing one: the agent's, writable by nobody else, outside the state.
pub fn open_work_root(work_root: &Path, state_dir: &Path) -> Result<(), String> {
    let (work, state) = (real(work_root), real(state_dir));
    if work.starts_with(&state) || state.starts_with(&work) {
        return Err(format!(
            "work root {} and state directory {} overlap; training must reach its working \
             directory and never the state",
            work_root.display(),
            state_dir.display()
        ));
    }
    if !work_root.exists() {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o711)
            .create(work_root)
            .and_then(|()| fs::set_permissions(work_root, fs::Permissions::from_mode(0o711)))
            .map_err(|e| format!("cannot make the work root {}: {e}", work_root.display()))?;
    }
    let info =
        fs::metadata(work_root).map_err(|e| format!("work root {}: {e}", work_root.display()))?;
    if !info.is_dir() {
        return Err(format!(
            "work root {} is not a directory",
            work_root.display()
        ));
    }
    if info.uid() != euid() || info.mode() & 0o022 != 0 {
        return Err(format!(
            "work root {} must be owned by the agent's uid {} and writable by it alone (it is \
             uid {}, mode {:04o})",
            work_root.display(),
            euid(),
            info.uid(),
            mode_of(&info)
        ));
    }
    Ok(())
}

/// The training user must pass through every directory down to the work root.
pub fn check_reachable(work_root: &Path, run_as: &RunAs) -> Result<(), String> {
    let work = real(work_root);
    let mut directories: Vec<&Path> = work.ancestors().collect();
    directories.reverse();
    for directory in directories {
        let info = fs::metadata(directory).map_err(|e| format!("{}: {e}", directory.display()))?;
        if !run_as.may_search(info.uid(), info.gid(), info.mode()) {
            return Err(format!(
                "the run-as user {} cannot reach the work root {}: {} is uid {} gid {} mode \
                 {:04o}",
                run_as.name(),
                work_root.display(),
                directory.display(),
                info.uid(),
                info.gid(),
                mode_of(&info)
            ));
        }
    }
    Ok(())
}

fn check_credential(state_dir: &Path) -> Result<(), String> {
    let path = state_dir.join(STATE_FILE);
    if let Ok(info) = fs::symlink_metadata(&path) {
        if info.uid() != euid() || info.mode() & 0o077 != 0 || !info.is_file() {
            return Err(format!(
                "node credential {} must be the agent's (uid {}) regular file, mode 0600; it is \
                 uid {}, mode {:04o}",
                path.display(),
                euid(),
                info.uid(),
                mode_of(&info)
            ));
        }
    }
    Ok(())
}

/// The host's places, checked (and the work root made).
pub fn open_host(state_dir: &Path, work_root: &Path, users: UserPool) -> Result<Host, String> {
    make_private(state_dir, "state directory").map_err(|e| e.0)?;
    check_credential(state_dir)?;
    open_work_root(work_root, state_dir)?;
    for run_as in &users.users {
        check_reachable(work_root, run_as)?;
    }
    Ok(Host {
        state_dir: state_dir.to_path_buf(),
        work_root: work_root.to_path_buf(),
        users,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_resolves_links_as_far_as_the_path_exists() {
        let dir = std::env::temp_dir().join(format!("tp-real-{}", std::process::id()));
        fs::create_dir_all(dir.join("state")).unwrap();
        let _ = fs::remove_file(dir.join("link"));
        std::os::unix::fs::symlink(dir.join("state"), dir.join("link")).unwrap();
        let dir = fs::canonicalize(&dir).unwrap();
        assert_eq!(real(&dir.join("link/new/x")), dir.join("state/new/x"));
        assert_eq!(real(&dir.join("link/../y")), dir.join("y"));
        // A missing part does not stop links after it from being resolved.
        assert_eq!(
            real(&dir.join("missing/../link/node.json")),
            dir.join("state/node.json")
        );
        fs::remove_dir_all(&dir).unwrap();
    }
}
