"""Which Unix user each project's Slurm jobs run as (``--slurm-run-as``).

The job's user is the operator's choice per project, never the launching tenant's: a
project's jobs run as its own user, so one tenant's training cannot read another's files,
spools or job scripts, nor signal its tasks. ``PROJECT=USER`` maps one project;
a bare ``USER`` every project not mapped otherwise. No job runs as root, and a control not
running as root can only submit as its own user.
"""

from __future__ import annotations

import os
import pwd
from collections.abc import Sequence
from dataclasses import dataclass

from tuneplane.control.by_project import ByProject


class JobUserError(ValueError):
    """A --slurm-run-as setting that cannot be used, or a project without a user."""


@dataclass(frozen=True, slots=True)
class JobUser:
    name: str
    uid: int
    gid: int
    home: str

    def sbatch_options(self) -> list[str]:
        """sbatch's options to run the job as this user (none for control's own)."""
        if self.uid == os.geteuid():
            return []
        return [f"--uid={self.uid}", f"--gid={self.gid}"]

    def environment(self) -> dict[str, str]:
        return {"HOME": self.home, "USER": self.name, "LOGNAME": self.name}


def resolve(name: str) -> JobUser:
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        raise JobUserError(f"--slurm-run-as {name}: no such user on this host") from None
    if entry.pw_uid == 0:
        raise JobUserError(f"--slurm-run-as {name}: training never runs as root; name an "
                           "unprivileged user")
    if entry.pw_uid != os.geteuid() and os.geteuid() != 0:
        raise JobUserError(f"--slurm-run-as {name}: submitting jobs as another user needs "
                           f"control to run as root (it runs as uid {os.geteuid()})")
    return JobUser(entry.pw_name, entry.pw_uid, entry.pw_gid, entry.pw_dir)


class JobUsers(ByProject[JobUser]):
    def __init__(self, settings: Sequence[str]) -> None:
        super().__init__(settings, flag="--slurm-run-as", what="Unix user for its Slurm jobs",
                         placeholder="USER", resolve=resolve, error=JobUserError)
        if not settings and os.geteuid() != 0:
            self._default = resolve(pwd.getpwuid(os.geteuid()).pw_name)
