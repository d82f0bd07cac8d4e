"""Places a source is never read from, however its path resolves.

A training command owns its working directory: at any moment it can replace a source file
with a symbolic link into the node agent's state directory (the node credential, workload
tokens) or the spool. The collector reads with more rights than the training command, so
every source file is opened first and the file actually opened is then checked (its path as
the kernel names it, ``/proc/self/fd/N``): no check-then-open race. Only regular files are
read (a FIFO or device would block or never end).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO


class SourceRefused(OSError):
    """The source resolves into a fenced directory or is not a regular file; says which."""


def inside(path: Path, directory: Path) -> bool:
    return path == directory or path.is_relative_to(directory)


@dataclass(frozen=True, slots=True)
class Fence:
    """Directories (resolved) no source may be read from."""

    forbidden: tuple[Path, ...] = ()

    @classmethod
    def of(cls, directories: list[Path]) -> Fence:
        return cls(tuple(Path(os.path.realpath(d)) for d in directories))

    def refusal(self, path: Path) -> str | None:
        """Why ``path`` may not be read (as it resolves now), or None."""
        real = Path(os.path.realpath(path))
        for directory in self.forbidden:
            if inside(real, directory):
                return (f"{path} resolves to {real}, inside {directory}, which sources are "
                        "never read from")
        return None

    def open(self, path: Path) -> BinaryIO:
        """``path`` opened for reading, once the file opened is known to be allowed."""
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
        try:
            opened = Path(os.readlink(f"/proc/self/fd/{fd}"))
            for directory in self.forbidden:
                if inside(opened, directory):
                    raise SourceRefused(f"{path} is {opened}, inside {directory}, which "
                                        "sources are never read from")
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise SourceRefused(f"{path} is not a regular file")
            os.set_blocking(fd, True)
            return os.fdopen(fd, "rb")
        except BaseException:
            os.close(fd)
            raise


#: No fence: plain reading (``tuneplane-collector read``, a collector run by hand).
OPEN = Fence()
