"""Places a source is never read from, however its path resolves.

A training command owns its working directory: at any moment it can replace a source file
with a symbolic link into the node agent's state directory (the node credential, workload
tokens) or the spool. The collector reads with more rights than the training command, so
every source file is opened first and the file actually opened is then checked (its path as
the kernel names it, ``/proc/self/fd/N``): no check-then-open race. Only regular files are
read (a FIFO or device would block or never end). Who opens is ``open_fd``: under a node
agent, the training user (``opener``), so nothing it could not read itself is read.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


class SourceRefused(OSError):
    """The source may not or cannot be read (fenced, not a regular file, not the training
    user's to open); the message says which."""

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.errno = code


def open_plainly(path: Path) -> int:
    """With the collector's own rights."""
    return os.open(path, FLAGS)


def inside(path: Path, directory: Path) -> bool:
    return path == directory or path.is_relative_to(directory)


@dataclass(frozen=True, slots=True)
class Fence:
    """Directories (resolved) no source may be read from, and who opens sources."""

    forbidden: tuple[Path, ...] = ()
    open_fd: Callable[[Path], int] = open_plainly

    @classmethod
    def of(cls, directories: list[Path],
           open_fd: Callable[[Path], int] = open_plainly) -> Fence:
        return cls(tuple(Path(os.path.realpath(d)) for d in directories), open_fd)

    def refusal(self, path: Path) -> str | None:
        """Why ``path`` may not be read (as it resolves now), or None."""
        real = Path(os.path.realpath(path))
        for directory in self.forbidden:
            if inside(real, directory):
                return (f"{path} resolves to {real}, inside {directory}, which sources are "
                        "never read from")
        return None

    def open_directory(self, path: Path) -> int:
        """``path`` opened as a directory to list, once it is known to be allowed: a
        descriptor the caller closes. FileNotFoundError when it is gone,
        NotADirectoryError when it is something else, SourceRefused for any other reason."""
        fd = self._opened(path)
        try:
            self._check_fenced(path, fd)
            if not stat.S_ISDIR(os.fstat(fd).st_mode):
                raise NotADirectoryError(f"{path} is not a directory")
            return fd
        except BaseException:
            os.close(fd)
            raise

    def _opened(self, path: Path) -> int:
        try:
            return self.open_fd(path)
        except (SourceRefused, FileNotFoundError):
            raise
        except OSError as exc:
            raise SourceRefused(f"{path} cannot be opened: {exc.strerror}", exc.errno) from None

    def _check_fenced(self, path: Path, fd: int) -> None:
        opened = Path(os.readlink(f"/proc/self/fd/{fd}"))
        for directory in self.forbidden:
            if inside(opened, directory):
                raise SourceRefused(f"{path} is {opened}, inside {directory}, which "
                                    "sources are never read from")

    def open(self, path: Path) -> BinaryIO:
        """``path`` opened for reading, once the file opened is known to be allowed.
        FileNotFoundError when it is gone; SourceRefused for any other reason."""
        fd = self._opened(path)
        try:
            self._check_fenced(path, fd)
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise SourceRefused(f"{path} is not a regular file")
            os.set_blocking(fd, True)
            return os.fdopen(fd, "rb")
        except BaseException:
            os.close(fd)
            raise


#: No fence: plain reading (``tuneplane-collector read``, a collector run by hand).
OPEN = Fence()
