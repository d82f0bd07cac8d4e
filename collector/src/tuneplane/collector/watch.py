"""When a following collector looks again: on inotify's word where the kernel gives it, on a
timer where it cannot.

inotify only says *when* to read: what is read is still listed and opened through the
fence (``logdir.event_files``, ``Fence.open``), so a watch never reads anything. Watches
go only on directories a fenced listing returned (or a source file's directory outside
every fenced directory), with ``IN_DONT_FOLLOW | IN_ONLYDIR``: no link is followed. A
directory on a network filesystem (the spool's list: NFS, SMB/CIFS, Lustre, network
FUSE, ...), one that cannot be watched (no watch left), and everything when inotify cannot
be had at all are polled, and the collector says so once with the reason.

``Wakeups.wait`` is steppable: it returns whether something changed (True when it cannot
tell, as polling), and ``listing_stale`` whether a directory's entries changed since the
last listing (a new file or run), so an unchanged log directory is not walked again.
"""

from __future__ import annotations

import logging
import os
import select
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Protocol

from tuneplane.collector.spoolroot import (
    SpoolPlaceError,
    mount_of,
    network_filesystem,
    parse_mountinfo,
)

log = logging.getLogger("tuneplane.collector")

IN_MODIFY, IN_ATTRIB, IN_CLOSE_WRITE = 0x2, 0x4, 0x8
IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE, IN_DELETE = 0x40, 0x80, 0x100, 0x200
IN_DELETE_SELF, IN_MOVE_SELF = 0x400, 0x800
IN_Q_OVERFLOW, IN_IGNORED = 0x4000, 0x8000
IN_ONLYDIR, IN_DONT_FOLLOW = 0x01000000, 0x02000000
#: Events that change what a listing would return (or lose track of it).
ENTRY_EVENTS = IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_DELETE_SELF | \
    IN_MOVE_SELF | IN_Q_OVERFLOW | IN_IGNORED
WATCHED = IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | ENTRY_EVENTS | IN_ONLYDIR | IN_DONT_FOLLOW


class Kernel(Protocol):
    """What is used of an inotify instance (``inotify_simple.INotify``)."""

    def fileno(self) -> int: ...
    def add_watch(self, path: str, mask: int) -> int: ...
    def read(self, timeout: int | None = None) -> Iterable[tuple[int, int, int, str]]: ...
    def close(self) -> None: ...


def open_inotify() -> Kernel:
    """An inotify instance; OSError when the kernel has none to give (ENOSYS, EMFILE)."""
    import inotify_simple  # type: ignore[import-untyped]  # ctypes, no stubs

    kernel: Kernel = inotify_simple.INotify()
    return kernel


def filesystem_type(path: Path, mountinfo: str | None = None) -> str:
    """The type of the filesystem ``path`` is on, as /proc/self/mountinfo names it."""
    try:
        text = mountinfo if mountinfo is not None else \
            Path("/proc/self/mountinfo").read_text()
        return mount_of(Path(os.path.realpath(path)), parse_mountinfo(text)).fs_type
    except (OSError, SpoolPlaceError):
        return ""


class Wakeups(Protocol):
    #: "inotify" or "polling", for the log and the tests.
    mode: str

    def watch(self, directories: Iterable[Path]) -> None: ...
    def wait(self, timeout: float) -> bool: ...
    def listing_stale(self) -> bool: ...
    def close(self) -> None: ...


class Polling:
    """Look again every ``wait``: every listing is stale."""

    mode = "polling"

    def __init__(self, sleep: Callable[[float], object] = time.sleep) -> None:
        self._sleep = sleep

    def watch(self, directories: Iterable[Path]) -> None:
        pass

    def wait(self, timeout: float) -> bool:
        self._sleep(timeout)
        return True

    def listing_stale(self) -> bool:
        return True

    def close(self) -> None:
        pass


class Inotify:
    """inotify on the directories read; any of them that cannot be watched is polled."""

    mode = "inotify"

    def __init__(self, kernel: Kernel, *, filesystem: Callable[[Path], str] = filesystem_type,
                 sleep: Callable[[float], object] = time.sleep) -> None:
        self._kernel = kernel
        self._filesystem = filesystem
        self._sleep = sleep
        self._watched: dict[Path, int] = {}
        self._directories: dict[int, Path] = {}  # watch descriptor → its directory
        self._unwatched: dict[Path, str] = {}  # directory → why it is polled
        self._missing: set[Path] = set()  # not there yet: polled until it is
        self._stale = True

    def watch(self, directories: Iterable[Path]) -> None:
        """Watch these directories from now on (a new watch makes the listing stale: what
        was created before it raised no event)."""
        for directory in directories:
            if directory in self._watched or directory in self._unwatched:
                continue
            self._missing.discard(directory)
            kind = self._filesystem(directory)
            if (network := network_filesystem(kind)) is not None:
                # The spool's list: where other hosts' writes raise no event here.
                self._poll(directory, f"is on {network} ({kind}), where other hosts' "
                                      "writes raise no inotify event")
                continue
            try:
                wd = self._kernel.add_watch(str(directory), WATCHED)
                self._watched[directory], self._directories[wd] = wd, directory
                self._stale = True
            except OSError as exc:
                if isinstance(exc, FileNotFoundError):
                    self._missing.add(directory)  # not written yet: watched once it is
                    continue
                self._poll(directory, f"cannot be watched: {exc.strerror or exc}")

    def _poll(self, directory: Path, reason: str) -> None:
        self._unwatched[directory] = reason
        log.warning("%s %s; it is polled", directory, reason)

    def wait(self, timeout: float) -> bool:
        """Whether something changed within ``timeout`` seconds (at once if a listing is
        stale; after ``timeout`` if some directory is polled)."""
        if self._stale:
            return True
        if self._unwatched or self._missing:
            self._sleep(timeout)
            return True
        ready, _, _ = select.select([self._kernel.fileno()], [], [], timeout)
        if not ready:
            return False
        for wd, mask, _, _ in self._kernel.read(timeout=0):
            if mask & ENTRY_EVENTS:
                self._stale = True
            if mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF):
                # Its watch is gone or now elsewhere: watched again if listed again.
                gone = self._directories.pop(wd, None)
                if gone is not None and self._watched.get(gone) == wd:
                    del self._watched[gone]
        return True

    def listing_stale(self) -> bool:
        """Whether a directory's entries may have changed since asked last (asking resets)."""
        stale, self._stale = self._stale, False
        return stale or bool(self._unwatched or self._missing)

    def close(self) -> None:
        self._kernel.close()


def wakeups(*, open_kernel: Callable[[], Kernel] = open_inotify,
            sleep: Callable[[float], object] = time.sleep) -> Wakeups:
    """inotify if the kernel gives it, else polling, said once with the reason."""
    try:
        return Inotify(open_kernel(), sleep=sleep)
    except OSError as exc:
        log.warning("inotify unavailable (%s): sources are polled", exc.strerror or exc)
        return Polling(sleep)
