"""Every record of a path decoded, as plain dicts: what ``tuneplane-collector read`` prints."""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from tuneplane.collector import jsonl, logdir, tensorboard
from tuneplane.collector.tbevents import Decoded, PurgeState, TagPlugins, decode
from tuneplane.telemetry.v1.names import RICH_KIND_NAMES, json_number


def tensorboard_records(root: Path, report: Callable[[str], None]) -> Iterator[dict[str, Any]]:
    listing = logdir.event_files(root)
    for problem in listing.problems:
        report(problem)
    files = listing.files
    if not files:
        raise FileNotFoundError(f"{root}: no *tfevents* files")
    runs: dict[str, PurgeState] = {}  # a run's files are read in name order, as TensorBoard
    for path in files:
        relative = path.relative_to(root).as_posix() if path != root else path.name
        plugins: TagPlugins = {}
        state = runs.setdefault(posixpath.dirname(relative), PurgeState())
        offset = 0
        with path.open("rb") as handle:
            while True:
                covered, scan = tensorboard.scan_at(handle, offset)
                for damage in scan.damage:
                    report(f"{relative}@{damage.offset}: {damage.reason}")
                for record_offset, data in scan.records:
                    yield from _decoded(data, relative, record_offset, plugins, state,
                                        report)
                if scan.consumed == 0:
                    if covered:
                        report(f"{relative}@{offset}: incomplete last record "
                               f"({covered} bytes); not read")
                    break
                offset += scan.consumed


def _decoded(data: bytes, relative: str, offset: int, plugins: TagPlugins, state: PurgeState,
             report: Callable[[str], None]) -> Iterator[dict[str, Any]]:
    out = Decoded()
    decode(data, source="", file=relative, offset=offset, plugins=plugins, state=state,
           out=out)
    for problem in out.problems:
        report(problem)
    for tag, step, wall_time, value in out.scalars:
        yield {"kind": "scalar", "file": relative, "offset": offset, "tag": tag,
               "step": step, "wall_time": wall_time, "value": json_number(value)}
    for r in out.rich:
        yield {"kind": RICH_KIND_NAMES[r.kind], "file": relative, "offset": offset, "tag": r.tag,
               "step": r.step, "wall_time": r.wall_time, "plugin": r.plugin_name,
               "bytes": len(r.payload)}
    for m in out.session_starts:
        kind = {"kind": "out_of_order_step", "tags": list(m.tags)} if m.tags else \
            {"kind": "session_start"}
        yield {**kind, "file": relative, "offset": offset, "step": m.step,
               "wall_time": m.wall_time}


def jsonl_records(path: Path, report: Callable[[str], None]) -> Iterator[dict[str, Any]]:
    offset = 0
    with path.open("rb") as handle:
        for number_of_line, raw in enumerate(handle, start=1):
            if not raw.endswith(b"\n"):
                report(f"{path}:{number_of_line}: incomplete last line; not read")
                break
            if raw.strip():
                try:
                    step, wall_time, metrics = jsonl.parse_line(raw)
                except jsonl.LineError as exc:
                    report(f"{path}:{number_of_line}: {exc}")
                else:
                    for tag, value in metrics:
                        yield {"kind": "scalar", "file": path.name, "offset": offset,
                               "line": number_of_line, "tag": tag, "step": step,
                               "wall_time": wall_time, "value": json_number(value)}
            offset += len(raw)


def records(path: Path, report: Callable[[str], None]) -> Iterator[dict[str, Any]]:
    """JSONL for ``*.jsonl`` files, TensorBoard for directories and event files."""
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file or directory")
    if path.is_file() and path.suffix == ".jsonl":
        return jsonl_records(path, report)
    return tensorboard_records(path, report)
