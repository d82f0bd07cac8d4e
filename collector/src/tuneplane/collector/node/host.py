"""This node's places and its training users, checked once when the agent starts.

The state directory (the node credential, every launch's token, configuration and logs) is
private to the agent's user. Working directories live under a separate work root, outside
it, which every training user can pass through (not list) to reach its own working
directory and nothing of the agent's.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from tuneplane.collector.fence import inside
from tuneplane.collector.node.client import STATE_FILE
from tuneplane.collector.node.pool import UserPool
from tuneplane.collector.node.runas import RunAs
from tuneplane.collector.spoolroot import SpoolPlaceError, make_private


class HostError(RuntimeError):
    """The agent cannot run launches on this host as configured; the message says why."""


@dataclass(frozen=True, slots=True)
class Host:
    """This node's places: the agent's private state, where working directories go, and
    the users training runs as."""

    state_dir: Path
    work_root: Path
    users: UserPool


def open_work_root(work_root: Path, state_dir: Path) -> None:
    """Make the work root (0711: others pass through to their own directory, list nothing)
    or check an existing one: the agent's, writable by nobody else, outside the state."""
    real, state = Path(os.path.realpath(work_root)), Path(os.path.realpath(state_dir))
    if inside(real, state) or inside(state, real):
        raise HostError(f"work root {work_root} and state directory {state_dir} overlap; "
                        "training must reach its working directory and never the state")
    if not work_root.exists():
        work_root.mkdir(parents=True, mode=0o711)
        os.chmod(work_root, 0o711)  # mkdir's mode is masked by the umask
    info = work_root.stat()
    if not stat.S_ISDIR(info.st_mode):
        raise HostError(f"work root {work_root} is not a directory")
    if info.st_uid != os.geteuid() or info.st_mode & 0o022:
        raise HostError(f"work root {work_root} must be owned by the agent's uid "
                        f"{os.geteuid()} and writable by it alone (it is uid {info.st_uid}, "
                        f"mode {stat.S_IMODE(info.st_mode):04o})")


def check_reachable(work_root: Path, run_as: RunAs) -> None:
    """The training user must pass through every directory down to the work root."""
    for directory in [*reversed(work_root.resolve().parents), work_root.resolve()]:
        if not run_as.may_search(directory):
            info = directory.stat()
            raise HostError(f"the run-as user {run_as.name} cannot reach the work root "
                            f"{work_root}: {directory} is uid {info.st_uid} gid {info.st_gid} "
                            f"mode {stat.S_IMODE(info.st_mode):04o}")


def check_credential(state_dir: Path) -> None:
    path = state_dir / STATE_FILE
    if path.exists():
        info = path.stat()
        if info.st_uid != os.geteuid() or info.st_mode & 0o077:
            raise HostError(f"node credential {path} must be the agent's (uid {os.geteuid()}) "
                            f"and mode 0600; it is uid {info.st_uid}, mode "
                            f"{stat.S_IMODE(info.st_mode):04o}")


def open_host(state_dir: Path, work_root: Path, users: UserPool) -> Host:
    """The host's places, checked (and the work root made); raises HostError."""
    try:
        make_private(state_dir, "state directory")
    except SpoolPlaceError as exc:
        raise HostError(str(exc)) from None
    check_credential(state_dir)
    open_work_root(work_root, state_dir)
    for run_as in users.users:
        check_reachable(work_root, run_as)
    return Host(state_dir, work_root, users)
