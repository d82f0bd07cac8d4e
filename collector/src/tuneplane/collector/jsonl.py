"""JSONL metric files: one JSON object per line, read from a byte offset into columns.

Line format::

    {"step": 120, "wall_time": 1732867200.5, "metrics": {"loss": 0.31, "lr": 3e-4}}

``step`` is an integer, ``wall_time`` seconds since the Unix epoch, each metric a
number (``NaN``, ``Infinity`` and ``-Infinity`` are accepted as bare tokens, as
Python's ``json.dumps`` writes them, or as strings). A line without its newline
yet is waited for, never read; a malformed line is reported with file and line
number and skipped.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from tuneplane.collector.draft import BatchDraft, Position, ReadStep
from tuneplane.collector.fence import OPEN
from tuneplane.telemetry.v1.validation import name_problem

READ_BYTES = 4 * 1024 * 1024
NON_FINITE = {"NaN": math.nan, "nan": math.nan, "Infinity": math.inf, "inf": math.inf,
              "-Infinity": -math.inf, "-inf": -math.inf}


class LineError(ValueError):
    pass


def parse_value(name: str, value: Any) -> float:
    if isinstance(value, bool) or value is None:
        raise LineError(f"metric {name!r} is {json.dumps(value)}, not a number")
    if isinstance(value, int | float):
        try:
            return float(value)
        except OverflowError:  # an integer of hundreds of digits
            raise LineError(f"metric {name!r} is an integer too large for a float") from None
    if isinstance(value, str) and value in NON_FINITE:
        return NON_FINITE[value]
    raise LineError(f"metric {name!r} is {value!r}, not a number")


class NameCache:
    """Sets of metric names already found to be names: a job logs the same few on every
    line, and checking each name of each line was a tenth of reading."""

    def __init__(self, bound: int = 1024) -> None:
        self._checked: set[tuple[str, ...]] = set()
        self._bound = bound

    def check(self, metrics: dict[str, Any]) -> None:
        """LineError naming the first metric name that is not a name."""
        names = tuple(metrics)
        if names in self._checked:
            return
        for name in names:
            if (problem := name_problem(name)) is not None:
                raise LineError(f"metric name {problem}")
        if len(self._checked) < self._bound:
            self._checked.add(names)


def parse_line(raw: bytes, names: NameCache | None = None,
               ) -> tuple[int, float, list[tuple[str, float]]]:
    try:
        record = orjson.loads(raw)
    except orjson.JSONDecodeError:
        try:  # bare NaN/Infinity tokens, which orjson refuses
            record = json.loads(raw)
            # orjson refuses a lone surrogate escape too ("\ud800"), which json lets by: it is
            # no UTF-8 text, and a name holding one could be neither checked nor stored.
            json.dumps(record, ensure_ascii=False).encode()
        except UnicodeEncodeError as exc:
            raise LineError(f"not JSON: a lone surrogate {exc.object[exc.start]!r} is not "
                            "text") from None
        except ValueError as exc:
            raise LineError(f"not JSON: {exc}") from None
        except RecursionError:  # deeper than Python's stack, which orjson refused at 1024
            raise LineError("not JSON: nested too deeply") from None
    if not isinstance(record, dict):
        raise LineError("not a JSON object")
    step, wall_time, metrics = record.get("step"), record.get("wall_time"), record.get("metrics")
    if not isinstance(step, int) or isinstance(step, bool) or not -(2**63) <= step < 2**63:
        raise LineError(f"'step' must be a 64-bit integer, got {step!r}")
    if not isinstance(wall_time, int | float) or isinstance(wall_time, bool):
        raise LineError(f"'wall_time' must be a number of seconds, got {wall_time!r}")
    if not isinstance(metrics, dict) or not metrics:
        raise LineError("'metrics' must be a non-empty object of name: number")
    (names or NameCache()).check(metrics)
    try:
        seconds = float(wall_time)
    except OverflowError:  # an integer of hundreds of digits
        raise LineError("'wall_time' must be a number of seconds, got an integer too large "
                        "for a float") from None
    return step, seconds, [(k, v if type(v) is float else parse_value(k, v))
                           for k, v in metrics.items()]


Opener = Callable[[Path], BinaryIO]


def skip_overlong(path: Path, offset: int, line: int, problems: list[str],
                  open_file: Opener = OPEN.open) -> tuple[int, int, bool]:
    """A line longer than READ_BYTES starts at ``offset``: skip it, said with file and line,
    once its end is written. Returns the new (offset, line, waiting for its end)."""
    with open_file(path) as handle:
        handle.seek(offset + READ_BYTES)
        where = offset + READ_BYTES
        while chunk := handle.read(1 << 20):
            found = chunk.find(b"\n")
            if found >= 0:
                end = where + found
                problems.append(f"{path}:{line}: line of {end - offset} bytes, over the "
                                f"{READ_BYTES} byte bound; skipped")
                return end + 1, line + 1, False
            where += len(chunk)
    return offset, line, True


def read(path: Path, source: str, position: Position, max_points: int,
         max_bytes: int, open_file: Opener = OPEN.open) -> ReadStep:
    """Read complete lines from ``position`` until a batch bound or the end of the file."""
    result = ReadStep(BatchDraft(source), position)
    draft, names = result.draft, NameCache()
    offset, line, start = position.offset, position.line, 0
    with open_file(path) as handle:
        handle.seek(position.offset)
        # A batch's lines are most often far fewer bytes than a whole read: read that much
        # first, the rest of a read's worth only if the batch is not full by then.
        data = handle.read(min(READ_BYTES, max(1 << 16, max_points * 64)))
        while True:
            end = data.find(b"\n", start)
            if end < 0:
                if len(data) < READ_BYTES and (more := handle.read(READ_BYTES - len(data))):
                    data += more
                    continue
                result.at_end = len(data) < READ_BYTES
                if start == 0 and not result.at_end:  # one line longer than a whole read
                    offset, line, result.at_end = skip_overlong(path, offset, line,
                                                                result.problems, open_file)
                break
            raw = data[start:end]
            try:
                if raw.strip():
                    step, wall_time, metrics = parse_line(raw, names)
                    cost = draft.cost(metrics)
                    if (draft.points + len(metrics) > max_points
                            or draft.approx_bytes + cost > max_bytes
                            or draft.crowded(metrics)):
                        if draft.points == 0:
                            raise LineError(f"{len(metrics)} metrics ({cost} bytes) on one "
                                            "line, over the bounds of one batch")
                        break
                    draft.add(step, wall_time, metrics, cost)
            except LineError as exc:
                result.problems.append(f"{path}:{line}: {exc}")
            offset += end + 1 - start
            line += 1
            start = end + 1
    result.position = Position(offset, line)
    return result
