"""A TensorBoard log directory as a source: every ``*tfevents*`` file below it (listed by
``logdir``).

Each file keeps its own identity, offset, the plugin metadata its tags
declared and its run's purge state (``tbevents.PurgeState``, handed on to the run's next
file), saved in the spool with the batch that advances it. A file's directory below the
log directory is its run (TensorBoard's: ``add_scalars`` writes one per key), and its
scalars' series carry it as their ``run_path``.
"""

from __future__ import annotations

import base64
import json
import os
import posixpath
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Protocol, TypeVar

from tuneplane.collector import native, tfrecord
from tuneplane.collector.draft import BatchDraft, Position, ReadStep
from tuneplane.collector.eventfill import EventFill
from tuneplane.collector.fence import OPEN
from tuneplane.collector.tbevents import PurgeState, TagPlugins, simple_scalar
from tuneplane.telemetry.v1.validation import escape_controls, name_problem, run_path_problem

if TYPE_CHECKING:
    from tuneplane.collector._native import Frames

READ_BYTES = 8 * 1024 * 1024


def load_plugins(saved: dict[str, list[Any]]) -> TagPlugins:
    return {tag: (plugin, base64.b64decode(content), data_class)
            for tag, (plugin, content, data_class) in saved.items()}


def load_state(state: str, previous: str = "") -> tuple[TagPlugins, PurgeState]:
    """A file's saved state: its tags' plugins and its run's purge state. A file not begun
    takes the purge state its run's previous file (saved state ``previous``) left."""
    if not state:
        return {}, load_state(previous)[1] if previous else PurgeState()
    saved = json.loads(state)
    if set(saved) != {"plugins", "purge"}:  # saved before purge states were: as version 2
        return load_plugins(saved), PurgeState(2.0)
    file_version, most_recent_step = saved["purge"]
    return load_plugins(saved["plugins"]), PurgeState(file_version, most_recent_step)


def dump_state(plugins: TagPlugins, purge: PurgeState) -> str:
    return json.dumps({"plugins": {tag: [plugin, base64.b64encode(content).decode(), data_class]
                                   for tag, (plugin, content, data_class) in plugins.items()},
                       "purge": [purge.file_version, purge.most_recent_step]}, sort_keys=True)


class Framed(Protocol):
    """What a scan of a buffer says about the next one (``tfrecord.Scan``, ``Frames``)."""

    @property
    def consumed(self) -> int: ...
    @property
    def wanted(self) -> int: ...
    @property
    def count(self) -> int: ...


F = TypeVar("F", bound=Framed)


def scan_at(handle: BinaryIO, offset: int, limit: int | None = None,
            ) -> tuple[int, tfrecord.Scan]:
    """Scan up to ``limit`` records from ``offset``: a read's worth, or one larger record.

    Returns the bytes read (from ``offset``) and the scan.
    """
    return frame_at(handle, offset, limit, tfrecord.scan)


def frame_at(handle: BinaryIO, offset: int, limit: int | None,
             scan: Callable[[bytes, int, int | None], F]) -> tuple[int, F]:
    """``scan_at`` with any framing of a buffer: Python's or the compiled reader's."""
    handle.seek(offset)
    # Records of scalars are ~50 bytes: a read sized to the limit, not 8 MiB each time.
    first = READ_BYTES if limit is None else min(READ_BYTES, max(limit * 256, 1 << 16))
    buffer = handle.read(first)
    found = scan(buffer, offset, limit)
    if len(buffer) == first < READ_BYTES and found.count < (limit or 0) \
            and not found.wanted:  # larger records: a read's worth after all
        buffer += handle.read(READ_BYTES - first)
        found = scan(buffer, offset, limit)
    if found.wanted > len(buffer) - found.consumed:
        handle.seek(offset + found.consumed)
        more = handle.read(found.wanted)
        if len(more) == found.wanted:
            buffer = buffer[:found.consumed] + more
            found = scan(buffer, offset, limit)
    return len(buffer), found


def is_name(tag: str) -> bool:
    return name_problem(tag) is None


def run_path_of(relative: str) -> str:
    """The run of the event file at ``relative`` (a '/'-separated path below the log
    directory): its directory, '' for a file of the log directory itself."""
    return posixpath.dirname(relative)


def read_file(path: Path, relative: str, source: str, start: Position, *, max_points: int,
              max_bytes: int, previous: str = "",
              open_file: Callable[[Path], BinaryIO] = OPEN.open,
              compiled: bool = True) -> ReadStep:
    """Read complete records of one event file from ``start`` up to the batch bounds;
    ``previous`` is the saved state of the run's file read before it, if any. ``compiled``
    False reads with the Python path even where the compiled reader is installed."""
    run_path = run_path_of(relative)
    # A run path identifies series: one that is not a name is refused, never escaped.
    run_refused = run_path_problem(run_path)
    relative = escape_controls(relative)  # a file name may hold what a record field may not
    plugins, purge = load_state(start.state, previous)
    framing = native.compiled() if compiled else None
    with open_file(path) as handle:
        size = os.fstat(handle.fileno()).st_size
        if framing is None:
            covered, scan = scan_at(handle, start.offset, limit=max_points)
        else:
            covered, frames = frame_at(handle, start.offset, max_points,
                                       lambda b, o, n: framing(b, o, n, is_name))
    result = ReadStep(BatchDraft(source, "" if run_refused else run_path), start)
    fill = EventFill(result, source=source, file=relative, plugins=plugins, purge=purge,
                     run_refused=run_refused, max_points=max_points, max_bytes=max_bytes)
    if framing is None:
        stop, count, consumed = fill_from_scan(fill, scan), scan.count, scan.consumed
        damage = scan.damage
    else:
        stop, count, consumed = fill_from_frames(fill, frames), frames.count, frames.consumed
        damage = [tfrecord.Damage.bad_data(offset) if skipped < 0 else
                  tfrecord.Damage.lost_framing(offset, skipped)
                  for offset, skipped in frames.damage]
    bounded = stop is not None
    if stop is None:
        stop = start.offset + consumed
    result.problems += [f"{relative}@{d.offset}: {d.reason}" for d in damage if d.offset < stop]
    if fill.skipped:
        result.problems.append(f"{relative}: run path {run_refused}; {fill.skipped} scalar "
                               "values skipped")
        result.rejected["run path not a name"] += fill.skipped
    result.position = Position(stop, 0, dump_state(plugins, purge))
    # At the end: what is left is at most one record still being written.
    limited = count >= max_points
    result.at_end = not (bounded or limited) and start.offset + covered >= size
    return result


def fill_from_scan(fill: EventFill, scan: tfrecord.Scan) -> int | None:
    """Fill the batch record by record (the Python path); the offset of the record that
    did not fit, if one did not."""
    names: dict[bytes, str] = {}
    for offset, data in scan.records:
        scalar = simple_scalar(data, names)
        if scalar is not None and fill.in_order(scalar[1]):
            if not fill.point(scalar):
                return offset
        elif not fill.record(offset, data):
            return offset
    return None


def fill_from_frames(fill: EventFill, frames: Frames) -> int | None:
    """Fill the batch from the compiled reader's records, runs of points at once."""
    for first, end, simple in frames.segments():
        if simple:
            if (stopped := fill.run(frames, first, end)) < end:
                return frames.offset(stopped)
        elif not fill.record(frames.offset(first), frames.data(first)):
            return frames.offset(first)
    return None
