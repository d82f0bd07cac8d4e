"""Keeping this process's memory from the other processes of its user.

A Slurm job's collector runs as the job's user, beside the training tasks. Made not
dumpable (``prctl(PR_SET_DUMPABLE, 0)``), its ``/proc/<pid>/mem``, ``environ``, ``fd``
and the like belong to root and it cannot be traced: a process of the same user can
neither read its memory nor attach to it (the kernel's ptrace access check), so the job
credential and workload tokens it holds in memory stay its own. It stays so across fork
(its threads and children) until an ``exec``.
"""

from __future__ import annotations

import ctypes
import ctypes.util

PR_SET_DUMPABLE = 4
PR_GET_DUMPABLE = 3


class SecrecyError(RuntimeError):
    """The process could not be made undumpable."""


def _prctl(option: int, arg: int) -> int:
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    result: int = libc.prctl(option, arg, 0, 0, 0)
    if result < 0:
        raise SecrecyError(f"prctl({option}) failed: errno {ctypes.get_errno()}")
    return result


def undumpable() -> None:
    """Make this process undumpable, or raise: credentials are never held otherwise."""
    _prctl(PR_SET_DUMPABLE, 0)
    if _prctl(PR_GET_DUMPABLE, 0) != 0:
        raise SecrecyError("the process is still dumpable after PR_SET_DUMPABLE 0")
