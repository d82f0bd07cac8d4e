"""What the binary made of its sources, looked at from outside: ``read``'s records and
problems, and a ``run`` against an unreachable ingest stopped once its spool says each file
is read to a given offset, then its sealed batches (the SQLite spool) in sequence order."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from tests.support.collector_binary import (
    HOST_TARGET,
    run,
    run_until,
    spool_status,
    spooled,
    unreachable_args,
)

Positions = dict[tuple[str, str], int]  # (source, file below it) -> offset read to
Series = dict[tuple[str, str], list[tuple[int, float, float]]]  # (run, tag) -> points


def read(path: Path, target: str = HOST_TARGET) -> tuple[list[dict[str, Any]], list[str]]:
    """``read PATH``: its records and its problems, in order."""
    done = run(target, "read", str(path), timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    records = [json.loads(line) for line in done.stdout.splitlines()]
    return records, done.stderr.decode().splitlines()


def number(value: float | str) -> float:
    """A value of ``read``'s output: JSON has no NaN or infinities, so they are strings."""
    return float(value)


def read_series(records: list[dict[str, Any]]) -> Series:
    """``read``'s scalars per (run, tag), in file order; the run is the file's directory."""
    series: Series = {}
    for record in records:
        if record["kind"] == "scalar":
            run_path = record["file"].rpartition("/")[0]
            series.setdefault((run_path, record["tag"]), []).append(
                (record["step"], record["wall_time"], number(record["value"])))
    return series


def purged(records: list[dict[str, Any]]) -> Series:
    """``read``'s scalars with its markers applied as TensorBoard's purge applies them (and
    tuneplane.web.read.purge): a run's first START starts it; any later marker drops the points
    of its run (of its tags, if it names them) read before it at its step or later; an
    event's marker comes before its own points."""
    series: Series = {}
    started: set[str] = set()
    events: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for record in records:  # dicts keep their order: the events in read order
        events.setdefault((record["file"], record["offset"]), []).append(record)
    for (file, _), found in events.items():
        run_path = file.rpartition("/")[0]
        for marker in (r for r in found if r["kind"] in ("session_start", "out_of_order_step")):
            if marker["kind"] == "session_start" and run_path not in started:
                started.add(run_path)
                continue
            for (other, tag), points in series.items():
                if other == run_path and tag in marker.get("tags", [tag]):
                    points[:] = [p for p in points if p[0] < marker["step"]]
        for scalar in (r for r in found if r["kind"] == "scalar"):
            series.setdefault((run_path, scalar["tag"]), []).append(
                (scalar["step"], scalar["wall_time"], number(scalar["value"])))
    return {key: points for key, points in series.items() if points}


def positions(spool: Path) -> Positions:
    """Where each source file is read to; none while the collector is making the spool."""
    found = spool_status(spool).get("positions", [])
    assert isinstance(found, list)
    return {(p["source"], p["file"]): p["offset"] for p in found}


def collect(tmp_path: Path, tls_dir: Path, until: Positions, *sources: str,
            ) -> subprocess.CompletedProcess[str]:
    """``run`` of ``sources`` (its arguments: ``--source``, ``--tensorboard``,
    ``--max-batch-points``, ...) spooling in ``tmp_path/spool``, stopped with SIGTERM once
    the spool holds every offset of ``until``; run again on the same ``tmp_path``, it goes
    on from the spool's positions, as a restarted collector does."""
    spool = tmp_path / "spool"

    def reached(found: list[dict[str, Any]]) -> bool:
        held = {(p["source"], p["file"]): p["offset"] for p in found}
        return all(held.get(k) == at for k, at in until.items())
    done, held = run_until(unreachable_args(tmp_path, tls_dir, *sources), spool, reached,
                           poll=0.05)
    assert held, (positions(spool), until, done.stderr[-3000:])
    assert done.returncode == 3, done.stderr  # ingest unreachable: the batches stay spooled
    return done


def spooled_series(spool: Path) -> Series:
    """The spool's scalars per (run path, tag), in batch order."""
    series: Series = {}
    for batch in spooled(spool):
        for chunk in batch.chunks:
            series.setdefault((chunk.run_path, chunk.tag), []).extend(
                zip(chunk.steps, chunk.wall_times, chunk.values, strict=True))
    return series


def spooled_points(spool: Path) -> list[tuple[str, int, float]]:
    """The spool's scalars as (tag, step, value), in batch order."""
    return [(c.tag, s, v) for b in spooled(spool) for c in b.chunks
            for s, v in zip(c.steps, c.values, strict=True)]
