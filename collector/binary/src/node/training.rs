//! Starting a launch's two processes: the training command as its run-as user, and the
//! collector beside it as the agent's user.
//!
//! The training process gets its working directory, an environment of its own (a few of the
//! agent's variables such as `PATH`, the launch's, its identity) and nothing else: no
//! inherited descriptor (every descriptor the agent opens is close-on-exec), no path into the
//! agent's state, a session of its own, and only its user's supplementary groups.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};

use super::users::RunAs;

/// The agent's variables a training command inherits; everything else it is given.
pub const PASSED_ON: [&str; 5] = ["PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ"];

/// Marks every descriptor from 3 up close-on-exec: the agent may have inherited some that
/// are not (from whoever started it), and none may reach a launch's process. Runs between
/// fork and exec, so system calls only; std's own error pipe stays open until the exec.
fn close_inherited_on_exec() {
    const CLOSE_RANGE_CLOEXEC: libc::c_uint = 1 << 2;
    // SAFETY: system calls on this process's own descriptor table.
    unsafe {
        if libc::syscall(
            libc::SYS_close_range,
            3,
            libc::c_uint::MAX,
            CLOSE_RANGE_CLOEXEC,
        ) != 0
        {
            // A kernel before 5.11: one by one.
            let most = libc::sysconf(libc::_SC_OPEN_MAX).clamp(1024, 1 << 20) as libc::c_int;
            for fd in 3..most {
                let flags = libc::fcntl(fd, libc::F_GETFD);
                if flags >= 0 {
                    libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC);
                }
            }
        }
    }
}

/// A log the process appends to (0600, the agent's: the process holds it for writing only).
pub fn log_file(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_CLOEXEC | libc::O_NOFOLLOW)
        .open(path)
}

/// The training command's whole environment: nothing of the agent's but `PASSED_ON`.
pub fn environment(
    run_as: &RunAs,
    workdir: &Path,
    launch: &std::collections::HashMap<String, String>,
    identity: &[(&str, String)],
) -> BTreeMap<String, String> {
    let mut env: BTreeMap<String, String> = std::env::vars()
        .filter(|(k, _)| PASSED_ON.contains(&k.as_str()))
        .collect();
    env.insert("HOME".into(), run_as.home.clone());
    env.insert("USER".into(), run_as.name().to_owned());
    env.insert("LOGNAME".into(), run_as.name().to_owned());
    env.insert("PWD".into(), workdir.display().to_string());
    env.extend(launch.iter().map(|(k, v)| (k.clone(), v.clone())));
    env.extend(identity.iter().map(|(k, v)| ((*k).to_owned(), v.clone())));
    env
}

/// Why `env` cannot be an environment (a name with `=` or a NUL, a value with a NUL).
fn bad_environment(env: &BTreeMap<String, String>) -> Option<String> {
    env.iter().find_map(|(name, value)| {
        if name.is_empty() || name.contains(['=', '\0']) {
            Some(format!("environment variable name {name:?} is not a name"))
        } else if value.contains('\0') {
            Some(format!("environment variable {name} holds a NUL"))
        } else {
            None
        }
    })
}

/// Starts `command` as `run_as` in `workdir`, in a session of its own; its output appends
/// to `log`.
pub fn start_training(
    run_as: &RunAs,
    command: &[String],
    workdir: &Path,
    env: &BTreeMap<String, String>,
    log: &Path,
) -> Result<Child, String> {
    let Some((program, args)) = command.split_first() else {
        return Err("the launch's command is empty".into());
    };
    if let Some(why) = bad_environment(env) {
        return Err(why);
    }
    let out = log_file(log).map_err(|e| format!("cannot open {}: {e}", log.display()))?;
    let err = out.try_clone().map_err(|e| e.to_string())?;
    let switch = (!run_as.same_user).then(|| {
        let groups: Vec<libc::gid_t> = run_as.id.groups.clone();
        (run_as.uid(), run_as.id.gid, groups)
    });
    let directory = std::ffi::CString::new(workdir.as_os_str().as_encoded_bytes())
        .map_err(|_| format!("working directory {} holds a NUL", workdir.display()))?;
    let mut training = Command::new(program);
    training
        .args(args)
        .env_clear()
        .envs(env)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err);
    // SAFETY: between fork and exec the closure makes system calls only, on values made
    // before the fork.
    unsafe {
        training.pre_exec(move || {
            close_inherited_on_exec();
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            if let Some((uid, gid, groups)) = &switch {
                if libc::setgroups(groups.len(), groups.as_ptr()) != 0
                    || libc::setresgid(*gid, *gid, *gid) != 0
                    || libc::setresuid(*uid, *uid, *uid) != 0
                {
                    return Err(std::io::Error::last_os_error());
                }
            }
            // Entered as the user, not as root: a directory the user may not enter (another
            // launch's, reached through a link swapped in since the check) is refused here.
            if libc::chdir(directory.as_ptr()) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if let Some((uid, _, _)) = &switch {
                let mut info: libc::stat = std::mem::zeroed();
                if libc::stat(c".".as_ptr(), &mut info) != 0 || info.st_uid != *uid {
                    return Err(std::io::Error::from_raw_os_error(libc::EACCES));
                }
            }
            Ok(())
        });
    }
    training.spawn().map_err(|e| format!("{program}: {e}"))
}

/// Starts the collector (`argv`) as the agent's user in `directory`, its output appended
/// to `directory/collector.log`.
pub fn start_collector(
    argv: &[String],
    directory: &Path,
    env: &[(&str, String)],
) -> Result<Child, String> {
    let Some((program, args)) = argv.split_first() else {
        return Err("no collector command".into());
    };
    let log = directory.join("collector.log");
    let out = log_file(&log).map_err(|e| format!("cannot open {}: {e}", log.display()))?;
    let err = out.try_clone().map_err(|e| e.to_string())?;
    let mut collector = Command::new(program);
    // SAFETY: system calls only, between fork and exec.
    unsafe {
        collector.pre_exec(|| {
            close_inherited_on_exec();
            Ok(())
        });
    }
    collector
        .args(args)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .current_dir(directory)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .map_err(|e| format!("the collector {program} could not start: {e}"))
}

/// Signals the training command's session (its own process group), if anything is left.
pub fn signal_group(leader: u32, signal: libc::c_int) {
    if let Ok(leader) = libc::pid_t::try_from(leader) {
        // SAFETY: a plain system call; a group that is gone answers ESRCH.
        unsafe { libc::killpg(leader, signal) };
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::os::unix::fs::PermissionsExt;

    use super::*;
    use crate::node::testing::{stranger, Place};

    #[test]
    fn training_starts_as_the_user_with_nothing_of_the_agents() {
        let place = Place::new("training");
        let user = stranger(7);
        let workdir = place.0.join("work");
        std::fs::create_dir(&workdir).unwrap();
        std::fs::set_permissions(&workdir, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::os::unix::fs::lchown(&workdir, Some(user.uid()), Some(user.id.gid)).unwrap();
        let launch = HashMap::from([("SEED".to_owned(), "7".to_owned())]);
        let identity = [("TUNEPLANE_MEMBER", "rank-0".to_owned())];
        let mut env = environment(&user, &workdir, &launch, &identity);
        env.insert("PATH".into(), "/usr/bin:/bin".into());
        env.remove("LANG");
        assert!(!env.keys().any(|k| k.starts_with("CARGO")), "{env:?}"); // nothing of the agent's
        let probe = "id -u; id -g; id -G; pwd; ls /proc/self/fd | tr '\\n' ' '; echo; \
                     [ \"$(ps -o sid= -p $$ | tr -d ' ')\" = \"$$\" ] && echo leader; \
                     (: >>/proc/self/fd/1) 2>/dev/null || echo reopen-refused; env | sort";
        let log = place.0.join("training.log");
        let command = ["/bin/sh".to_owned(), "-c".to_owned(), probe.to_owned()];
        let status = start_training(&user, &command, &workdir, &env, &log)
            .unwrap()
            .wait()
            .unwrap();
        let seen = std::fs::read_to_string(&log).unwrap();
        assert!(status.success(), "{seen}");
        let lines: Vec<&str> = seen.lines().collect();
        let uid = user.uid().to_string();
        assert_eq!(
            lines[..4],
            [uid.as_str(), &uid, &uid, &workdir.display().to_string()]
        );
        // Standard input, output and error, and the directory ls reads: nothing inherited.
        assert_eq!(lines[4].split_whitespace().count(), 4, "{seen}");
        assert_eq!(lines[5..7], ["leader", "reopen-refused"], "{seen}");
        let env_seen: Vec<&str> = lines[7..]
            .iter()
            .copied()
            .filter(|l| !l.starts_with("PWD=") && !l.starts_with("SHLVL=") && !l.starts_with('_'))
            .collect();
        let wanted = [
            "HOME=/".to_owned(),
            format!("LOGNAME=uid {uid}"),
            "PATH=/usr/bin:/bin".into(),
            "SEED=7".into(),
            "TUNEPLANE_MEMBER=rank-0".into(),
            format!("USER=uid {uid}"),
        ];
        assert_eq!(env_seen, wanted, "{seen}");
        let info = std::fs::metadata(&log).unwrap();
        assert_eq!(info.permissions().mode() & 0o777, 0o600);
        // A directory the user may not enter is not entered for it (as root) either.
        let theirs = place.0.join("theirs");
        std::fs::create_dir(&theirs).unwrap();
        std::fs::set_permissions(&theirs, std::fs::Permissions::from_mode(0o700)).unwrap();
        let refused = start_training(&user, &command, &theirs, &env, &log).unwrap_err();
        assert!(refused.contains("Permission denied"), "{refused}");
    }
}
