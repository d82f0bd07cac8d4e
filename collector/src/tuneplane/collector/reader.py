"""Reads declared sources into sealed spool batches, one bounded batch per step."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tuneplane.collector import jsonl
from tuneplane.collector.spool import SavedPosition, Spool

log = logging.getLogger("tuneplane.collector")


@dataclass(frozen=True, slots=True)
class SourceSpec:
    source_id: str
    path: Path


def file_key(stat: os.stat_result) -> str:
    """A file's identity: a replaced file (new inode) is a new file, read from its start."""
    return f"{stat.st_dev}:{stat.st_ino}"


class SourceReader:
    """Steppable: each ``run_once`` seals at most one batch per source."""

    def __init__(self, spool: Spool, sources: list[SourceSpec], *, max_points: int,
                 max_bytes: int, spool_bytes: int, clock: Callable[[], float]) -> None:
        self._spool = spool
        self._sources = sources
        self._max_points = max_points
        self._max_bytes = max_bytes
        self._spool_bytes = spool_bytes
        self._clock = clock
        self.problems: list[str] = []
        self.points_read = 0

    def spool_full(self) -> bool:
        return self._spool.stored_bytes() >= self._spool_bytes

    def run_once(self) -> bool:
        """Returns True when every source is read to its end (nothing more to read now)."""
        idle = True
        for source in self._sources:
            if self.spool_full():
                log.warning("spool holds %d bytes (cap %d): reading paused, sources keep "
                            "the data", self._spool.stored_bytes(), self._spool_bytes)
                return False
            idle &= self._step(source)
        return idle

    def _step(self, source: SourceSpec) -> bool:
        try:
            stat = source.path.stat()
        except FileNotFoundError:
            return True  # not written yet
        key = file_key(stat)
        saved = self._spool.position(source.source_id)
        position = jsonl.Position()
        if saved is not None and saved.file_key == key:
            position = jsonl.Position(saved.offset, saved.line)
        if stat.st_size < position.offset:
            self._report(f"{source.path}: file shrank below the read offset {position.offset}; "
                         "waiting (a truncated file is not re-read)")
            return True
        if stat.st_size == position.offset:
            return True
        result = jsonl.read(source.path, source.source_id, position, self._max_points,
                            self._max_bytes)
        for problem in result.problems:
            self._report(problem)
        if result.position != position:
            self._spool.seal(result.columns.chunks(), source.source_id,
                             SavedPosition(key, result.position.offset, result.position.line),
                             sealed_at=self._clock())
            self.points_read += result.columns.points
        return result.at_end

    def close(self) -> None:
        self._spool.close()

    def _report(self, problem: str) -> None:
        log.error("%s", problem)
        self.problems.append(problem)
        del self.problems[:-1000]  # keep the newest; each was logged already
