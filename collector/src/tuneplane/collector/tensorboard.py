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
from typing import Any, BinaryIO

from tuneplane.collector import tfrecord
from tuneplane.collector.draft import BatchDraft, Position, ReadStep
from tuneplane.collector.fence import OPEN
from tuneplane.collector.tbevents import Decoded, PurgeState, TagPlugins, decode, simple_scalar
from tuneplane.telemetry.v1.limits import MAX_BATCH_SERIES
from tuneplane.telemetry.v1.validation import escape_controls, run_path_problem

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


def scan_at(handle: BinaryIO, offset: int, limit: int | None = None,
            ) -> tuple[int, tfrecord.Scan]:
    """Scan up to ``limit`` records from ``offset``: a read's worth, or one larger record.

    Returns the bytes read (from ``offset``) and the scan.
    """
    handle.seek(offset)
    # Records of scalars are ~50 bytes: a read sized to the limit, not 8 MiB each time.
    first = READ_BYTES if limit is None else min(READ_BYTES, max(limit * 256, 1 << 16))
    buffer = handle.read(first)
    scan = tfrecord.scan(buffer, offset, limit)
    if len(buffer) == first < READ_BYTES and len(scan.records) < (limit or 0) \
            and not scan.wanted:  # larger records: a read's worth after all
        buffer += handle.read(READ_BYTES - first)
        scan = tfrecord.scan(buffer, offset, limit)
    if scan.wanted > len(buffer) - scan.consumed:
        handle.seek(offset + scan.consumed)
        more = handle.read(scan.wanted)
        if len(more) == scan.wanted:
            buffer = buffer[:scan.consumed] + more
            scan = tfrecord.scan(buffer, offset, limit)
    return len(buffer), scan


def refuse_oversized(decoded: Decoded, max_bytes: int, where: str, problems: list[str]) -> int:
    """Drop rich records that could never fit a batch, each with a reason; returns how many."""
    kept = [r for r in decoded.rich if BatchDraft.rich_cost(r) <= max_bytes]
    for record in decoded.rich:
        if BatchDraft.rich_cost(record) > max_bytes:
            problems.append(f"{where}: {record.tag!r} record of {record.ByteSize()} bytes is "
                            f"over the {max_bytes} byte batch bound; refused, not truncated")
    refused = len(decoded.rich) - len(kept)
    decoded.rich[:] = kept
    return refused


def run_path_of(relative: str) -> str:
    """The run of the event file at ``relative`` (a '/'-separated path below the log
    directory): its directory, '' for a file of the log directory itself."""
    return posixpath.dirname(relative)


def read_file(path: Path, relative: str, source: str, start: Position, *, max_points: int,
              max_bytes: int, previous: str = "",
              open_file: Callable[[Path], BinaryIO] = OPEN.open) -> ReadStep:
    """Read complete records of one event file from ``start`` up to the batch bounds;
    ``previous`` is the saved state of the run's file read before it, if any."""
    run_path = run_path_of(relative)
    # A run path identifies series: one that is not a name is refused, never escaped.
    run_refused = run_path_problem(run_path)
    relative = escape_controls(relative)  # a file name may hold what a record field may not
    plugins, purge = load_state(start.state, previous)
    with open_file(path) as handle:
        size = os.fstat(handle.fileno()).st_size
        covered, scan = scan_at(handle, start.offset, limit=max_points)
    result = ReadStep(BatchDraft(source, "" if run_refused else run_path), start)
    skipped = 0
    stop = start.offset + scan.consumed
    bounded = False
    draft, decoded = result.draft, Decoded()
    names: dict[bytes, str] = {}
    for offset, data in scan.records:
        scalar = simple_scalar(data, names)
        if scalar is not None and (purge.restarts() or scalar[1] >= purge.most_recent_step):
            # One point in order, no problem, nothing rich: what ``decode`` would give.
            if (draft.points >= max_points or draft.approx_bytes + 64 > max_bytes or
                    (len(draft.series) >= MAX_BATCH_SERIES and draft.crowded((scalar,)))) \
                    and not draft.empty():
                stop, bounded = offset, True
                break
            purge.most_recent_step = scalar[1]
            if run_refused:
                skipped += 1
            else:
                draft.add_point(*scalar)
            continue
        decoded.clear()
        before = (purge.file_version, purge.most_recent_step)  # this record may be read again
        decode(data, source=source, file=relative, offset=offset, plugins=plugins, state=purge,
               out=decoded)
        dropped = len(decoded.scalars) if run_refused else 0
        if dropped:
            decoded.scalars.clear()
        cost = len(decoded.scalars) * 64  # a point, and its share of a new chunk's names
        if decoded.problems or decoded.rich or decoded.session_starts:
            result.problems += decoded.problems
            refused = refuse_oversized(decoded, max_bytes, f"{relative}@{offset}",
                                       result.problems)
            if refused:
                result.rejected["over the batch bound"] += refused
            cost += sum(draft.rich_cost(r) for r in decoded.rich)
        # A purge marker opens its batch: every point of earlier batches was read before it
        # and every point of its batch after it, which is what applying TensorBoard's purge
        # needs.
        over = bool(decoded.session_starts) or \
            draft.points + len(decoded.scalars) > max_points or \
            draft.approx_bytes + cost > max_bytes or \
            ((decoded.rich or decoded.session_starts or
              len(draft.series) + len(decoded.scalars) > MAX_BATCH_SERIES) and
             draft.crowded(decoded.scalars, len(decoded.rich), len(decoded.session_starts)))
        if over and not draft.empty():
            stop, bounded = offset, True
            purge.file_version, purge.most_recent_step = before
            break
        skipped += dropped
        for tag, step, wall_time, value in decoded.scalars:
            draft.add_point(tag, step, wall_time, value)
        for record in decoded.rich:
            draft.add_rich(record)
        for marker in decoded.session_starts:
            draft.add_session_start(marker)
    result.problems += [f"{relative}@{d.offset}: {d.reason}" for d in scan.damage
                        if d.offset < stop]
    if skipped:
        result.problems.append(f"{relative}: run path {run_refused}; {skipped} scalar values "
                               "skipped")
        result.rejected["run path not a name"] += skipped
    result.position = Position(stop, 0, dump_state(plugins, purge))
    # At the end: what is left is at most one record still being written.
    limited = len(scan.records) >= max_points
    result.at_end = not (bounded or limited) and start.offset + covered >= size
    return result
