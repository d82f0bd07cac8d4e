"""Reads declared sources into sealed spool batches, one bounded batch per file per step
(a TensorBoard run's files one after the other, in name order)."""

from __future__ import annotations

import enum
import logging
import os
import posixpath
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tuneplane.collector import failpoints, jsonl, logdir, tensorboard
from tuneplane.collector.draft import Position
from tuneplane.collector.fence import OPEN, Fence, SourceRefused
from tuneplane.collector.spool import SavedPosition, Spool
from tuneplane.collector.watch import Polling, Wakeups

if TYPE_CHECKING:
    from tuneplane.collector.channels import ChannelReader, ChannelSpec

log = logging.getLogger("tuneplane.collector")


class SourceKind(enum.StrEnum):
    JSONL = "jsonl"
    TENSORBOARD = "tensorboard"
    CHANNEL = "channel"  # a rich JSONL channel


@dataclass(frozen=True, slots=True)
class SourceSpec:
    source_id: str
    path: Path
    kind: SourceKind = SourceKind.JSONL
    channel: ChannelSpec | None = None


def file_key(stat: os.stat_result) -> str:
    """A file's identity: a replaced file (new inode) is a new file, read from its start."""
    return f"{stat.st_dev}:{stat.st_ino}"


@dataclass(slots=True)
class Counters:
    points: int = 0
    rich: int = 0
    refused: int = 0   # rich records over a bound or budget, or off their schema
    problems: int = 0


class SourceReader:
    """Steppable: each ``run_once`` seals at most one batch per file of every source."""

    def __init__(self, spool: Spool, sources: list[SourceSpec], *, max_points: int,
                 max_bytes: int, spool_bytes: int, clock: Callable[[], float],
                 fence: Fence = OPEN, wakeups: Wakeups | None = None) -> None:
        self._spool = spool
        self._sources = sources
        self._max_points = max_points
        self._max_bytes = max_bytes
        self._spool_bytes = spool_bytes
        self._clock = clock
        self._fence = fence
        self._open = fence.open
        #: What says a log directory must be listed again; told which directories were.
        self._wakeups: Wakeups = wakeups if wakeups is not None else Polling()
        self._listings: dict[str, list[tuple[Path, str]]] = {}  # source → its files
        self._refused: set[tuple[str, str]] = set()  # (file key or problem, path) said once
        self.counters = Counters()
        self.problems: list[str] = []
        self._channels: dict[str, ChannelReader] = {}
        if any(s.channel is not None for s in sources):
            # Only with channels: their JSON Schema validation is a start-up cost.
            from tuneplane.collector.channels import ChannelReader

            self._channels = {s.source_id: ChannelReader(s.channel, clock, fence.open)
                              for s in sources if s.channel is not None}

    @property
    def points_read(self) -> int:
        return self.counters.points

    def spool_full(self) -> bool:
        return self._spool.stored_bytes() >= self._spool_bytes

    def run_once(self) -> bool:
        """Returns True when every source is read to its end (nothing more to read now)."""
        idle = True
        if self._wakeups.listing_stale():
            self._listings.clear()
        for source in self._sources:
            behind: set[str] = set()  # TensorBoard runs with an earlier file not read to its end
            last: dict[str, str] = {}  # run → its file listed last so far
            for path, relative in self._files(source):
                run = posixpath.dirname(relative)
                if run in behind:
                    continue
                if self.spool_full():
                    log.warning("spool holds %d bytes (cap %d): reading paused, sources keep "
                                "the data", self._spool.stored_bytes(), self._spool_bytes)
                    return False
                at_end = self._step(source, path, relative, last.get(run, ""))
                last[run] = relative
                if not at_end and source.kind is SourceKind.TENSORBOARD:
                    # A run's files are read one after the other, in name order, as
                    # TensorBoard does: batch order is its read order (restart purges).
                    behind.add(run)
                idle &= at_end
        return idle

    def _files(self, source: SourceSpec) -> list[tuple[Path, str]]:
        """The source's files, each with its name relative to the source."""
        if source.kind is not SourceKind.TENSORBOARD:
            if source.source_id not in self._listings:
                self._watch_outside_listing(source.path.parent)
                self._listings[source.source_id] = [(source.path, "")]
            return self._listings[source.source_id]
        cached = self._listings.get(source.source_id)
        if cached is not None:
            return cached
        listing = logdir.event_files(source.path, self._fence)
        for problem in listing.problems:
            self._report_once(source.path, problem)
        if listing.directories:
            self._wakeups.watch(listing.directories)
        elif listing.files:  # the source is one event file
            self._watch_outside_listing(source.path.parent)
        else:  # not written yet
            self._watch_outside_listing(source.path)
        files = [(p, p.relative_to(source.path).as_posix() if p != source.path else p.name)
                 for p in listing.files]
        self._listings[source.source_id] = files
        return files

    def _watch_outside_listing(self, directory: Path) -> None:
        """Watch a directory no fenced listing opened (a source file's), unless fenced."""
        if self._fence.refusal(directory) is None:
            self._wakeups.watch([directory])

    def _report_once(self, path: Path, problem: str, key: str = "") -> None:
        """``problem`` reported the first time it is seen for (``key``, ``path``)."""
        if (key or problem, str(path)) not in self._refused:
            self._refused.add((key or problem, str(path)))
            self._report(problem)

    def _step(self, source: SourceSpec, path: Path, relative: str, previous: str = "",
              ) -> bool:
        """Read one step of a file; ``previous`` is the TensorBoard run's file before it."""
        try:
            stat = path.stat()
        except FileNotFoundError:
            return True  # not written yet
        key = file_key(stat)
        saved = self._spool.position(source.source_id, relative)
        start = saved if saved is not None and saved.file_key == key else SavedPosition(key, 0)
        if stat.st_size < start.offset:
            self._report(f"{path}: file shrank below the read offset {start.offset}; "
                         "waiting (a truncated file is not re-read)")
            return True
        if stat.st_size == start.offset:
            return True
        resume = Position(start.offset, start.line, start.state)
        try:
            if source.kind is SourceKind.JSONL:
                step = jsonl.read(path, source.source_id, resume, self._max_points,
                                  self._max_bytes, self._open)
            elif source.kind is SourceKind.CHANNEL:
                step = self._channels[source.source_id].read(resume,
                                                             max_bytes=self._max_bytes)
            else:
                before = self._spool.position(source.source_id, previous) \
                    if previous and not resume.state else None
                step = tensorboard.read_file(path, relative, source.source_id, resume,
                                             max_points=self._max_points,
                                             max_bytes=self._max_bytes,
                                             previous=before.state if before else "",
                                             open_file=self._open)
        except FileNotFoundError:
            return True  # gone since it was looked at: as if not written yet
        except SourceRefused as exc:
            self._report_once(path, f"source {source.source_id}: refused: {exc}", key)
            return True
        for problem in step.problems:
            self._report(problem)
        self.counters.refused += sum(step.rejected.values())
        if step.position != resume:
            draft = step.draft
            failpoints.reach("read")
            self._spool.seal(draft, relative, SavedPosition(key, step.position.offset,
                                                            step.position.line,
                                                            step.position.state),
                             sealed_at=self._clock(), rejected=dict(step.rejected))
            failpoints.reach("seal")
            self.counters.points += draft.points
            self.counters.rich += len(draft.rich)
        return step.at_end

    def close(self) -> None:
        self._spool.close()

    def _report(self, problem: str) -> None:
        log.error("%s", problem)
        self.counters.problems += 1
        self.problems.append(problem)
        del self.problems[:-1000]  # keep the newest; each was logged already
