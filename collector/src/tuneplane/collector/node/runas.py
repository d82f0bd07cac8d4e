"""The users training commands run as, and how one is started as such a user.

The node agent's user holds the node credential, every launch's workload token, the trust
bundle and the spools. Training code runs as other, unprivileged users (``--run-as``, one
or several: a pool, so that each running launch has a user of its own), and none of that
is open to it: the agent refuses to start training as its own user unless told to
(``--allow-same-user``, a single-user workstation). The training process gets its
working directory, an environment of its own (a few of the agent's variables such as
``PATH``, the launch's, its identity) and nothing else: no inherited descriptor, no path
into the agent's state, its own session.
"""

from __future__ import annotations

import os
import pwd
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

#: The agent's variables a training command inherits; everything else it is given.
PASSED_ON = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ")


class RunAsError(RuntimeError):
    """Training cannot run as the user asked for; the message says why."""


@dataclass(frozen=True, slots=True)
class RunAs:
    name: str
    uid: int
    gid: int
    groups: tuple[int, ...]  # the user's own supplementary groups, none of the agent's
    home: str
    same_user: bool  # the agent's own user: only with --allow-same-user

    def environment(self, workdir: Path, launch: dict[str, str],
                    identity: dict[str, str]) -> dict[str, str]:
        """The training command's whole environment: nothing of the agent's but PASSED_ON."""
        inherited = {k: v for k, v in {**os.environ}.items() if k in PASSED_ON}  # handed on
        return {**inherited, "HOME": self.home, "USER": self.name, "LOGNAME": self.name,
                "PWD": str(workdir), **launch, **identity}

    def start(self, command: list[str], workdir: Path, env: dict[str, str],
              log: Path) -> subprocess.Popen[bytes]:
        """Start ``command`` as this user in ``workdir``; its output appends to ``log``
        (0600, the agent's: the training process holds it open for writing only)."""
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
        switch = not self.same_user
        try:
            return subprocess.Popen(
                command, cwd=workdir, env=env, stdin=subprocess.DEVNULL, stdout=fd,
                stderr=subprocess.STDOUT, close_fds=True, start_new_session=True,
                user=self.uid if switch else None, group=self.gid if switch else None,
                extra_groups=list(self.groups) if switch else None)
        finally:
            os.close(fd)

    def may_search(self, directory: Path) -> bool:
        """Whether this user may pass through ``directory`` (its mode bits; ACLs aside)."""
        info = directory.stat()
        if info.st_uid == self.uid:
            return bool(info.st_mode & 0o100)
        if info.st_gid in (self.gid, *self.groups):
            return bool(info.st_mode & 0o010)
        return bool(info.st_mode & 0o001)


def capable_of_switching() -> bool:
    """Whether this process may change user and group (CAP_SETUID and CAP_SETGID)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("CapEff:"):
            effective = int(line.split()[1], 16)
            return bool(effective & (1 << 6)) and bool(effective & (1 << 7))
    return os.geteuid() == 0


def resolve(name: str | None, *, allow_same_user: bool) -> RunAs:
    """The run-as user by name (None: the agent's own); raises RunAsError."""
    me = os.geteuid()
    try:
        entry = pwd.getpwuid(me) if name is None else pwd.getpwnam(name)
    except KeyError:
        hint = " (give each user of a pool its own --run-as)" if name and "," in name else ""
        raise RunAsError(f"--run-as {name}: no such user on this host{hint}") from None
    same = entry.pw_uid == me
    if same and not allow_same_user:
        raise RunAsError(
            f"training would run as the agent's own user {entry.pw_name} (uid {me}), which "
            "can read the node credential, every workload token and the spools; give "
            "--run-as an unprivileged user, or --allow-same-user on a single-user workstation")
    if entry.pw_uid == 0 and not same:
        raise RunAsError("--run-as root: training never runs as root")
    if not same and not capable_of_switching():
        raise RunAsError(f"running training as {entry.pw_name} needs the agent to run as "
                         f"root (or with CAP_SETUID and CAP_SETGID); it runs as uid {me}")
    groups = tuple(os.getgrouplist(entry.pw_name, entry.pw_gid))
    return RunAs(entry.pw_name, entry.pw_uid, entry.pw_gid, groups, entry.pw_dir, same)


def resolve_pool(names: Sequence[str | None], *, allow_same_user: bool) -> tuple[RunAs, ...]:
    """The run-as users by name (None: the agent's own), each a different user and each
    checked as ``resolve`` does; raises RunAsError naming the user refused."""
    users: list[RunAs] = []
    for name in names:
        user = resolve(name, allow_same_user=allow_same_user)
        twin = next((u for u in users if u.uid == user.uid), None)
        if twin is not None:
            what = "is given twice" if twin.name == user.name else \
                f"is uid {user.uid}, the same user as --run-as {twin.name}"
            raise RunAsError(f"--run-as {user.name} {what}; each launch gets a user of its "
                             "own, so name each user once")
        users.append(user)
    own = next((u for u in users if u.same_user), None)
    if own is not None and len(users) > 1:
        raise RunAsError(f"--run-as {own.name}: the agent's own user cannot be in a pool with "
                         "others: training as it reads every launch's token and working "
                         "directory; give it alone (--allow-same-user) or leave it out")
    return tuple(users)
