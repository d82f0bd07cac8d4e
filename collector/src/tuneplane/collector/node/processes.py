"""The processes a run-as user runs, and ending them all before the user serves again.

A user of an exclusive pool is held by one launch at a time, so once that launch has ended
every process of the user is a leftover of it (say a daemon that left the training
command's session), which could read or signal the next launch given the user. They are
killed from inside the user, ``kill(-1, SIGKILL)`` as it: the kernel signals them all in
one pass, so no process forking in a loop outruns it. A process is the user's when any of
its user ids (real, effective, saved, filesystem) is; a zombie is not counted (it runs no
code and only waits to be reaped).
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

from tuneplane.collector.node.runas import RunAs

PROC = Path("/proc")


def owners(status: str) -> set[int]:
    """The user ids of a process from its ``/proc/<pid>/status``; none for a zombie."""
    fields = {key: value for key, _, value in (line.partition(":")
                                                for line in status.splitlines())}
    if fields.get("State", "").split()[:1] == ["Z"]:
        return set()
    return {int(uid) for uid in fields.get("Uid", "").split()}


def processes(proc: Path = PROC) -> dict[int, set[int]]:
    """Every live process (not a zombie) by pid, with its user ids."""
    found: dict[int, set[int]] = {}
    for entry in os.scandir(proc):
        if not entry.name.isdigit():
            continue
        try:
            uids = owners(Path(entry.path, "status").read_text())
        except OSError:  # it exited while we looked
            continue
        if uids:
            found[int(entry.name)] = uids
    return found


def live_uids() -> set[int]:
    """The users that run at least one live process now."""
    return set().union(*processes().values())


def processes_of(uid: int) -> list[int]:
    return sorted(pid for pid, uids in processes().items() if uid in uids)


def kill_all_as(user: RunAs) -> None:
    """``kill(-1, SIGKILL)`` from a child that is ``user``: every process of the user but
    that child. The child only makes system calls (the agent has threads)."""
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            os.setgroups([])
            os.setresgid(user.gid, user.gid, user.gid)
            os.setresuid(user.uid, user.uid, user.uid)
            with contextlib.suppress(ProcessLookupError):  # nothing left to kill
                os.kill(-1, signal.SIGKILL)
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    os.waitpid(pid, 0)


def end_all(user: RunAs, *, timeout: float = 10.0,
            clock: Callable[[], float] = time.monotonic) -> list[int]:
    """Kill every process of ``user`` and wait until none is left; the pids still there
    after ``timeout`` (one in uninterruptible sleep, say), or none."""
    deadline = clock() + timeout
    while left := processes_of(user.uid):
        if clock() >= deadline:
            return left
        kill_all_as(user)
        time.sleep(0.05)
    return []
