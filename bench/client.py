"""Reading a whole series into a notebook: ``tuneplane-client`` against MLflow's
``MlflowClient.get_metric_history``, the same points in the same PostgreSQL.

Both stores are filled directly (ours by the projector's own projection and writer, MLflow's
``metrics`` table by COPY: its ``log_batch`` would take the better part of an hour for
10 million points). Each read runs in a process of its own, which reports its peak RSS
(``VmHWM``; ``wait4`` would count the parent's pages the child held before its exec). Each
read also sums the values (``math.fsum``, exact; not timed), and the sum must equal the
written one. Printed, for each reader: points, seconds, points/s and peak RSS.

  ours, streamed   ``run.iter_scalars``: one export page (a million points) at a time
  ours, Arrow      ``run.scalars``: the whole series in one Arrow table
  ours, pandas     ``run.scalars(frame="pandas")``
  MLflow           ``get_metric_history``: one answer with every point, as Metric objects

    uv run --group peers python bench/client.py [--points 10000000] [--mlflow-points 10000000]

Needs the real services (``eval "$(scripts/services up)"``) and the peers group (mlflow).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import asyncpg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.peers import mlflow_server
from bench.query import start_web, viewer_token
from tests.support.environment import Endpoints, bench_workspace, run_admin
from tuneplane.projector.projection import RecordMeta, project
from tuneplane.projector.writer import PostgresWriter
from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1.limits import MAX_BATCH_POINTS

TAG = "loss"
DATABASE = "mlflow_client_bench"


def value(step: int) -> float:
    """A curve with every bit of a float64 in use."""
    return math.exp(-step / 3e6) + math.sin(step * 0.37) / 1e3


def truth(points: int) -> float:
    return math.fsum(value(s) for s in range(points))


async def fill_ours(database_url: str, run_id: str, points: int) -> None:
    pool = await asyncpg.create_pool(database_url, min_size=1, max_size=2)
    writer = PostgresWriter(pool)
    try:
        group = []
        for n, first in enumerate(range(0, points, MAX_BATCH_POINTS)):
            steps = list(range(first, min(points, first + MAX_BATCH_POINTS)))
            group.append(project(pb.Batch(
                identity=pb.BatchIdentity(run_id=run_id, attempt=1, member="rank-0",
                                          spool_epoch="e", sequence=n + 1),
                chunks=[pb.SeriesChunk(source="train", tag=TAG, steps=steps,
                                       wall_times=[1.7e9 + s / 10 for s in steps],
                                       values=[value(s) for s in steps])]
            ).SerializeToString(), RecordMeta(0, n, None)))
            if len(group) == 50:
                await writer.write_group(group)
                group = []
        if group:
            await writer.write_group(group)
    finally:
        await pool.close()


async def fill_mlflow(database_url: str, run_uuid: str, points: int) -> None:
    """MLflow's own rows (key, value, timestamp ms, run_uuid, step, is_nan), as log_batch
    would have stored them."""
    db = await asyncpg.connect(database_url)
    try:
        for first in range(0, points, 1_000_000):
            rows = [(TAG, value(s), 1_700_000_000_000 + s * 100, run_uuid, s, False)
                    for s in range(first, min(points, first + 1_000_000))]
            await db.copy_records_to_table(
                "metrics", records=rows,
                columns=["key", "value", "timestamp", "run_uuid", "step", "is_nan"])
        await db.execute("ANALYZE metrics")
    finally:
        await db.close()


def read(kind: str, url: str, token: str, run_id: str) -> dict[str, Any]:
    """One reader, in this process: what it read and how long it took (without the time
    the check's sums took)."""
    started, checking = time.perf_counter(), 0.0

    def fsum(values: list[float]) -> float:
        nonlocal checking
        begun = time.perf_counter()
        total = math.fsum(values)
        checking += time.perf_counter() - begun
        return total

    if kind == "mlflow":
        from mlflow.tracking import MlflowClient
        history = MlflowClient(tracking_uri=url).get_metric_history(run_id, TAG)
        count, total = len(history), fsum([m.value for m in history])
    else:
        from tuneplane.client import Client
        run = Client(url, token).run(run_id)
        if kind == "stream":
            count, parts = 0, []
            for batch in run.iter_scalars(TAG):
                count += batch.num_rows
                parts.append(fsum(batch.column("value").to_pylist()))
            total = math.fsum(parts)
        else:
            frame = run.scalars(TAG, frame="pandas" if kind == "pandas" else "arrow")
            column = frame["value"] if kind == "pandas" else frame.column("value")
            count = len(frame)
            total = fsum(column.tolist() if kind == "pandas" else column.to_pylist())
    seconds = time.perf_counter() - started - checking
    peak = next(int(line.split()[1]) for line in Path("/proc/self/status").read_text(
    ).splitlines() if line.startswith("VmHWM:"))
    return {"points": count, "seconds": seconds, "sum": total, "peak_mib": peak / 1024}


def measured(kind: str, url: str, token: str, run_id: str) -> dict[str, Any]:
    """``read`` in a child process of its own."""
    done = subprocess.run([sys.executable, __file__, "--read", kind, url, token, run_id],
                          stdout=subprocess.PIPE, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"the {kind} reader failed ({done.returncode})")
    found: dict[str, Any] = json.loads(done.stdout)
    return found


def line(label: str, found: dict[str, Any], expected: tuple[int, float]) -> str:
    exact = "exact" if (found["points"], found["sum"]) == expected else (
        f"WRONG: {found['points']:,} points, sum {found['sum']!r} != {expected[1]!r}")
    return (f"  {label:<16} {found['points']:>12,} points {found['seconds']:8.2f} s "
            f"{found['points'] / found['seconds']:>12,.0f} points/s   peak RSS "
            f"{found['peak_mib']:8.1f} MiB   {exact}")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--points", type=int, default=10_000_000, help="points in the series")
    parser.add_argument("--mlflow-points", type=int, default=None,
                        help="points in MLflow's (default: --points)")
    args = parser.parse_args()
    theirs = args.mlflow_points or args.points
    endpoints = Endpoints.from_environ(os.environ)
    work, _ = bench_workspace(endpoints, "tuneplane-client-bench-")
    run_admin(endpoints, "init")
    admin = await asyncpg.connect(endpoints.database_url)
    await admin.execute(f"DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)")
    await admin.execute(f"CREATE DATABASE {DATABASE}")
    await admin.close()

    run_id = f"bench-client-{uuid.uuid4().hex[:8]}"
    started = time.perf_counter()
    await fill_ours(endpoints.database_url, run_id, args.points)
    print(f"filled ours with {args.points:,} points in {time.perf_counter() - started:.1f} s",
          flush=True)
    token = await viewer_token(endpoints)
    web = start_web()
    server = mlflow_server(endpoints, work, DATABASE)
    try:
        from mlflow.tracking import MlflowClient
        mlflow_url = f"http://127.0.0.1:{server.port}"
        mlflow = MlflowClient(tracking_uri=mlflow_url)
        mlflow_run = mlflow.create_run(mlflow.create_experiment(f"bench-{time.time_ns()}"))
        database_url = endpoints.database_url.rsplit("/", 1)[0] + f"/{DATABASE}"
        await fill_mlflow(database_url, mlflow_run.info.run_id, theirs)
        print(f"filled MLflow with {theirs:,} points", flush=True)
        ours_url = f"http://127.0.0.1:{web.port}"
        print(f"one series read whole, each reader in a process of its own, "
              f"{os.cpu_count()} cores:")
        results = {}
        for kind, label in (("stream", "ours, streamed"), ("arrow", "ours, Arrow"),
                            ("pandas", "ours, pandas")):
            results[kind] = measured(kind, ours_url, token, run_id)
            print(line(label, results[kind], (args.points, truth(args.points))), flush=True)
        results["mlflow"] = measured("mlflow", mlflow_url, "", mlflow_run.info.run_id)
        print(line("MLflow", results["mlflow"], (theirs, truth(theirs))), flush=True)
        rate = {k: r["points"] / r["seconds"] for k, r in results.items()}
        print(f"  ratios to MLflow (points/s): streamed {rate['stream'] / rate['mlflow']:.1f}x, "
              f"Arrow {rate['arrow'] / rate['mlflow']:.1f}x, pandas "
              f"{rate['pandas'] / rate['mlflow']:.1f}x; peak RSS streamed "
              f"{results['mlflow']['peak_mib'] / results['stream']['peak_mib']:.1f}x smaller")
    finally:
        server.stop()
        web.stop()


if __name__ == "__main__":
    if sys.argv[1:2] == ["--read"]:
        print(json.dumps(read(*sys.argv[2:6])))
    else:
        asyncio.run(main())
