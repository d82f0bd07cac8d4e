"""The event files of a TensorBoard log directory: every ``*tfevents*`` file below it
(sub-directories too: ``add_scalars`` writes there), listed with the training user's rights
and within a bound.

The training command owns the log directory and the collector lists it again every poll, so
the listing is bounded: at most ``MAX_ENTRIES`` directory entries are looked at per walk
(a job writing millions of files cannot make every poll of its collector unbounded), and
the walk says so when it stops early. Each directory is opened through the fence
(``Fence.open_directory``): under a node agent by the training user, never inside a fenced
directory, and symbolic links to directories are not followed. A directory that cannot be
opened is passed over, with the reason.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from tuneplane.collector.fence import OPEN, Fence, SourceRefused

#: Directory entries looked at per walk of one log directory.
MAX_ENTRIES = 100_000


@dataclass(slots=True)
class Listing:
    files: list[Path] = field(default_factory=list)
    #: The directories listed (each opened through the fence), to watch for changes.
    directories: list[Path] = field(default_factory=list)
    #: Why parts of the log directory were not listed (a bound, a refusal); empty if none.
    problems: list[str] = field(default_factory=list)


def _entries(directory: Path, fence: Fence) -> list[tuple[str, bool]]:
    """(name, is a directory) of each entry of ``directory``, opened through ``fence``."""
    fd = fence.open_directory(directory)
    try:
        with os.scandir(fd) as found:
            return [(entry.name, entry.is_dir(follow_symlinks=False)) for entry in found]
    finally:
        os.close(fd)


def event_files(root: Path, fence: Fence = OPEN, *, max_entries: int = MAX_ENTRIES,
                ) -> Listing:
    """The event files below ``root`` in path order (``root`` itself, if it is a file)."""
    listing, seen, pending = Listing(), 0, [root]
    while pending:
        directory = pending.pop()
        try:
            entries = _entries(directory, fence)
        except FileNotFoundError:
            continue  # not written yet, or gone
        except NotADirectoryError:
            if directory == root:
                listing.files.append(root)
            continue
        except SourceRefused as exc:
            listing.problems.append(f"{directory}: not listed: {exc}")
            continue
        listing.directories.append(directory)
        seen += len(entries)
        if seen > max_entries:
            listing.problems.append(
                f"{root}: more than {max_entries} directory entries below it; "
                f"{directory} and what is not yet listed are not read (a log directory "
                "holds event files, not a dataset)")
            break
        for name, is_directory in sorted(entries, reverse=True):
            if is_directory:
                pending.append(directory / name)
            elif "tfevents" in name:
                listing.files.append(directory / name)
    listing.files.sort()
    return listing
