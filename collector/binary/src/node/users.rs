//! The users training commands run as.
//!
//! The node agent's user holds the node credential, every launch's workload token, the trust
//! bundle and the spools. Training runs as other, unprivileged users (`--run-as`, one or
//! several: a pool, so that each running launch has a user of its own), and none of that is
//! open to them. The agent refuses to start training as its own user unless told to
//! (`--allow-same-user`, a single-user workstation), and never as root for another agent
//! user. Names are looked up in `/etc/passwd` and `/etc/group`, as a static binary reads
//! them; a directory-service user is given as `UID:GID[:GROUP,...]`.

use crate::runas::Identity;

/// One run-as user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunAs {
    pub id: Identity,
    pub home: String,
    /// The agent's own user: only with `--allow-same-user`.
    pub same_user: bool,
}

impl RunAs {
    pub fn name(&self) -> &str {
        &self.id.name
    }
    pub fn uid(&self) -> u32 {
        self.id.uid
    }

    /// Whether this user may pass through a directory of `mode`, owned by `uid`:`gid`
    /// (its mode bits; ACLs aside).
    pub fn may_search(&self, uid: u32, gid: u32, mode: u32) -> bool {
        if uid == self.id.uid {
            mode & 0o100 != 0
        } else if gid == self.id.gid || self.id.groups.contains(&gid) {
            mode & 0o010 != 0
        } else {
            mode & 0o001 != 0
        }
    }
}

/// Whether this process may change user and group (CAP_SETUID and CAP_SETGID).
fn capable_of_switching() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|caps| u64::from_str_radix(caps.trim(), 16).ok())
        .is_some_and(|caps| caps & (1 << 6) != 0 && caps & (1 << 7) != 0)
}

fn home_of(uid: u32) -> String {
    nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid))
        .ok()
        .flatten()
        .map_or_else(|| "/".to_owned(), |u| u.dir.display().to_string())
}

/// The run-as user by name or number (None: the agent's own).
pub fn resolve(given: Option<&str>, allow_same_user: bool) -> Result<RunAs, String> {
    let me = nix::unistd::geteuid().as_raw();
    let id = match given {
        None => {
            let user = nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(me))
                .ok()
                .flatten()
                .ok_or_else(|| format!("the agent's uid {me} is not in /etc/passwd"))?;
            Identity::parse(&user.name)
        }
        Some(name)
            if !name.contains(':')
                && nix::unistd::User::from_name(name).ok().flatten().is_none() =>
        {
            let hint = if name.contains(',') {
                " (give each user of a pool its own --run-as)"
            } else {
                " (a directory-service user is given as UID:GID[:GROUP,...])"
            };
            return Err(format!("--run-as {name}: no such user on this host{hint}"));
        }
        Some(name) => Identity::parse(name),
    }
    .map_err(|e| e.replace("--read-as", "--run-as"))?;
    let same = id.uid == me;
    if same && !allow_same_user {
        return Err(format!(
            "training would run as the agent's own user {} (uid {me}), which can read the \
             node credential, every workload token and the spools; give --run-as an \
             unprivileged user, or --allow-same-user on a single-user workstation",
            id.name
        ));
    }
    if id.uid == 0 && !same {
        return Err("--run-as root: training never runs as root".into());
    }
    if !same && !capable_of_switching() {
        return Err(format!(
            "running training as {} needs the agent to run as root (or with CAP_SETUID and \
             CAP_SETGID); it runs as uid {me}",
            id.name
        ));
    }
    Ok(RunAs {
        home: home_of(id.uid),
        id,
        same_user: same,
    })
}

/// The run-as users (None: the agent's own), each a different user, each checked as
/// `resolve` does.
pub fn resolve_pool(given: &[Option<String>], allow_same_user: bool) -> Result<Vec<RunAs>, String> {
    let mut users: Vec<RunAs> = Vec::new();
    for name in given {
        let user = resolve(name.as_deref(), allow_same_user)?;
        if let Some(twin) = users.iter().find(|u| u.uid() == user.uid()) {
            let what = if twin.name() == user.name() {
                "is given twice".to_owned()
            } else {
                format!(
                    "is uid {}, the same user as --run-as {}",
                    user.uid(),
                    twin.name()
                )
            };
            return Err(format!(
                "--run-as {} {what}; each launch gets a user of its own, so name each user once",
                user.name()
            ));
        }
        users.push(user);
    }
    if let Some(own) = users.iter().find(|u| u.same_user) {
        if users.len() > 1 {
            return Err(format!(
                "--run-as {}: the agent's own user cannot be in a pool with others: training \
                 as it reads every launch's token and working directory; give it alone \
                 (--allow-same-user) or leave it out",
                own.name()
            ));
        }
    }
    Ok(users)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_agents_own_user_is_refused_unless_allowed() {
        let refused = resolve(None, false).unwrap_err();
        assert!(
            refused.starts_with("training would run as the agent's own user"),
            "{refused}"
        );
        assert!(resolve(None, true).unwrap().same_user);
    }

    #[test]
    fn a_missing_user_and_root_and_a_twin_are_refused_by_name() {
        let missing = resolve(Some("no-such-user-x"), false).unwrap_err();
        assert!(
            missing.starts_with("--run-as no-such-user-x: no such user"),
            "{missing}"
        );
        let pair = resolve(Some("a,b"), false).unwrap_err();
        assert!(pair.contains("its own --run-as"), "{pair}");
        if nix::unistd::geteuid().is_root() {
            // Root is the agent's own user here: allowed only alone, as the same user.
            let twice = resolve_pool(&[Some("nobody".into()), Some("nobody".into())], false);
            assert!(twice.unwrap_err().contains("is given twice"));
        } else {
            let root = resolve(Some("root"), false).unwrap_err();
            assert!(root.contains("never runs as root"), "{root}");
        }
    }

    #[test]
    fn search_rights_follow_owner_group_then_others() {
        let user = RunAs {
            id: Identity {
                name: "u".into(),
                uid: 1000,
                gid: 1000,
                groups: vec![1000, 27],
            },
            home: "/".into(),
            same_user: false,
        };
        assert!(user.may_search(1000, 0, 0o700));
        assert!(!user.may_search(1000, 0, 0o077));
        assert!(user.may_search(0, 27, 0o710));
        assert!(!user.may_search(0, 5, 0o710));
        assert!(user.may_search(0, 5, 0o711));
    }
}
