"""Aim (``aim`` from PyPI, the peers group) as a tracking peer: its ``Run.track`` taking
the same points as the other peers, and its SDK reading a series back.

Aim stores a run's metrics in a local RocksDB repository written by the training process
itself (no server between), so its ingest figure is the SDK's own cost per point.
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

TAGS = 5


def track(repo: Path, points: int) -> tuple[float, int, str]:
    """(points/s through ``Run.track``, points per series, the run's hash): one call per
    step carrying every tag, as a training loop logs a step's metrics together."""
    from aim.sdk.run import Run

    steps = points // TAGS
    run = Run(repo=str(repo), experiment="bench", system_tracking_interval=None)
    started = time.perf_counter()
    for step in range(steps):
        run.track({f"metric_{k}": (step * 0.5 + k) / 7.0 for k in range(TAGS)}, step=step)
    run.close()
    return steps * TAGS / (time.perf_counter() - started), steps, str(run.hash)


def read(repo: Path, run_hash: str, requests: int) -> tuple[float, int]:
    """(p50 seconds, values) to read one series whole through Aim's SDK (it has no reduced
    read: a chart of it gets every point)."""
    from aim.sdk.run import Run
    from aim.storage.context import Context

    # Aim's UI server indexes finished runs in the background; its CLI does it at once.
    aim = shutil.which("aim", path=str(Path(sys.executable).parent))
    if aim is None:
        raise SystemExit("aim is not installed: run with `uv run --group peers ...`")
    subprocess.run([aim, "storage", "reindex", "--yes"], cwd=repo, check=True,
                   capture_output=True)
    series = Run(run_hash, repo=str(repo), read_only=True).get_metric("metric_0", Context({}))
    if series is None:
        raise SystemExit(f"no series metric_0 in Aim run {run_hash} of {repo}")
    latencies = []
    count = 0
    for _ in range(requests):
        started = time.perf_counter()
        _, values = series.values.sparse_numpy()
        latencies.append(time.perf_counter() - started)
        count = len(values)
    return statistics.median(latencies), count
