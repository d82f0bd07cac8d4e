//! Who `--read-as` names: a user by name, or by number as the node agent passes it.
//!
//! A static binary resolves names from `/etc/passwd` and `/etc/group` (and nscd, where one
//! runs): a user of a directory service the host reaches only through NSS modules is given
//! as `UID:GID[:GROUP,...]`, resolved by whoever launches the collector (the node agent does).

use std::ffi::CString;
use std::fmt;

use nix::unistd::{Gid, Uid, User};

/// A user to become: its ids and supplementary groups.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
    pub groups: Vec<u32>,
}

impl fmt::Display for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

fn number(text: &str, what: &str, given: &str) -> Result<u32, String> {
    text.parse()
        .map_err(|_| format!("--read-as {given:?}: {what} {text:?} is not a number"))
}

impl Identity {
    /// `USER` or `UID:GID[:GROUP,...]`.
    pub fn parse(given: &str) -> Result<Self, String> {
        if given.contains(':') {
            return Self::numeric(given);
        }
        let user = User::from_name(given)
            .map_err(|e| format!("--read-as {given:?}: cannot look the user up: {e}"))?
            .ok_or_else(|| {
                format!(
                    "--read-as {given:?}: no such user in /etc/passwd (a directory-service \
                     user is given as UID:GID[:GROUP,...])"
                )
            })?;
        let name = CString::new(given).map_err(|_| format!("--read-as {given:?}: a NUL"))?;
        let groups = nix::unistd::getgrouplist(&name, user.gid)
            .map_err(|e| format!("--read-as {given:?}: cannot list the user's groups: {e}"))?;
        Ok(Self {
            name: given.to_owned(),
            uid: user.uid.as_raw(),
            gid: user.gid.as_raw(),
            groups: groups.into_iter().map(Gid::as_raw).collect(),
        })
    }

    fn numeric(given: &str) -> Result<Self, String> {
        let mut parts = given.splitn(3, ':');
        let uid = number(parts.next().unwrap_or(""), "uid", given)?;
        let gid = number(parts.next().unwrap_or(""), "gid", given)?;
        let groups = match parts.next() {
            None | Some("") => vec![gid],
            Some(list) => list
                .split(',')
                .map(|g| number(g, "group", given))
                .collect::<Result<_, _>>()?,
        };
        // Named as the files name the user, if they do (else by number).
        let name = User::from_uid(Uid::from_raw(uid))
            .ok()
            .flatten()
            .map_or_else(|| format!("uid {uid}"), |user| user.name);
        Ok(Self {
            name,
            uid,
            gid,
            groups,
        })
    }

    /// Drop to this user and its groups for good, out of that user's reach (not dumpable),
    /// in `/`. Only system calls: it runs in a forked child.
    pub fn become_for_good(&self) -> Result<(), &'static str> {
        let groups: Vec<Gid> = self.groups.iter().copied().map(Gid::from_raw).collect();
        nix::unistd::setgroups(&groups).map_err(|_| "setgroups failed")?;
        nix::unistd::setgid(Gid::from_raw(self.gid)).map_err(|_| "setgid failed")?;
        nix::unistd::setuid(Uid::from_raw(self.uid)).map_err(|_| "setuid failed")?;
        if Uid::current().as_raw() != self.uid || Uid::effective().as_raw() != self.uid {
            return Err("still another user after setuid");
        }
        // Changing user already made it not dumpable unless fs.suid_dumpable=1 says otherwise.
        nix::sys::prctl::set_dumpable(false).map_err(|_| "prctl(PR_SET_DUMPABLE) failed")?;
        nix::unistd::chdir("/").map_err(|_| "chdir / failed")?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_give_the_groups_or_the_primary_group() {
        let who = Identity::parse("1001:1002:1002,27").unwrap();
        assert_eq!((who.uid, who.gid, who.groups), (1001, 1002, vec![1002, 27]));
        assert_eq!(Identity::parse("1001:1002").unwrap().groups, vec![1002]);
    }

    #[test]
    fn bad_input_is_named() {
        for (given, said) in [
            ("x:1", "uid \"x\" is not a number"),
            ("1:", "gid \"\" is not a number"),
            ("1:2:3,y", "group \"y\" is not a number"),
            ("no-such-user-x", "no such user in /etc/passwd"),
        ] {
            let why = Identity::parse(given).unwrap_err();
            assert!(why.contains(said), "{given}: {why}");
        }
    }

    #[test]
    fn a_name_resolves_from_the_files() {
        let root = Identity::parse("root").unwrap();
        assert_eq!((root.uid, root.gid), (0, 0));
    }
}
