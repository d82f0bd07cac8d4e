"""Tuneplane side by side with its peers, measured in one run on this machine.

Needs the real services (``eval "$(scripts/services up)"``) and the peers dependency
group (``uv run --group peers python bench/peers.py``):

1. Curves end to end: our collector reading a JSONL file until every point is in
   PostgreSQL (ingest, Kafka, one projector), against an MLflow tracking server (its
   PostgreSQL backend on the same PostgreSQL) taking the same points through ``log_batch``
   (1,000 metrics per call, the API's limit) from several client threads.
2. A retried batch: MLflow stores a ``log_batch`` retried with new timestamps twice; our
   resent batch (same identity) is stored once.
3. TensorBoard event files: the collector binary reading and sealing one, against
   TensorBoard's ``EventFileLoader``.
4. Aim (``Run.track``, one call per step with every tag) taking points, and reading one
   series back through its SDK, against our web API answering the same length of series
   reduced to 2,000 points over HTTP.

    uv run --group peers python bench/peers.py [--points 1000000] [--mlflow-points 100000]
                                               [--aim-points 50000]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import threading
import time
import urllib.request
from pathlib import Path

import asyncpg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import aim_peer
from bench.e2e import end_to_end
from bench.query import api_client, fill, start_web, timed, viewer_token
from bench.tb_read import events, read_with_ours, read_with_tensorboard
from tests.support.environment import BIN, Endpoints, bench_workspace, free_port
from tests.support.kafka import group_at_end
from tests.support.processes import Process, start_ingest, start_projector
from tests.support.truth import write_jsonl

TAGS = 5


def mlflow_server(endpoints: Endpoints, work: Path, database: str) -> Process:
    mlflow = shutil.which("mlflow", path=str(BIN))
    if mlflow is None:
        raise SystemExit("mlflow is not installed: run with `uv run --group peers ...`")
    url = endpoints.database_url.rsplit("/", 1)[0].replace("postgresql://",
                                                           "postgresql+psycopg://")
    port = free_port()
    server = Process([mlflow, "server", "--backend-store-uri", f"{url}/{database}",
                      "--default-artifact-root", (work / "mlflow-artifacts").as_uri(),
                      "--host", "127.0.0.1", "--port", str(port)], work / "mlflow.log",
                     ready="Uvicorn running on", port=port, env={"MLFLOW_TRACKING_URI": ""})
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # the first start creates its schema
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5):
                return server
        except OSError:
            time.sleep(0.5)
    raise SystemExit(f"MLflow did not answer /health:\n{server.tail()}")


def mlflow_log_batch(port: int, points: int, clients: int) -> tuple[float, int, int]:
    """(points/s through log_batch, rows after one retried batch, points in that batch)."""
    from mlflow.entities import Metric
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"http://127.0.0.1:{port}")
    experiment = client.create_experiment(f"bench-{time.time_ns()}")
    steps_each = points // (clients * TAGS)

    def log(run_id: str) -> None:
        batch: list[Metric] = []
        for step in range(steps_each):
            now = int(time.time() * 1000)
            batch += [Metric(f"metric/{k}", (step * 0.5 + k) / 7.0, now, step)
                      for k in range(TAGS)]
            if len(batch) >= 1000:
                client.log_batch(run_id, metrics=batch)
                batch = []
        if batch:
            client.log_batch(run_id, metrics=batch)

    runs = [client.create_run(experiment).info.run_id for _ in range(clients)]
    threads = [threading.Thread(target=log, args=(run,)) for run in runs]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    rate = steps_each * clients * TAGS / (time.perf_counter() - started)
    # A client retrying after a lost reply sends the batch again with fresh timestamps.
    retried = client.create_run(experiment).info.run_id
    for attempt in range(2):
        stamp = int(time.time() * 1000) + attempt
        client.log_batch(retried, metrics=[Metric("loss", step / 4, stamp, step)
                                           for step in range(100)])
    rows = len(client.get_metric_history(retried, "loss"))
    return rate, rows, 100


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--points", type=int, default=1_000_000, help="points for ours")
    parser.add_argument("--mlflow-points", type=int, default=100_000,
                        help="points for MLflow (it is slower; the rate is what is compared)")
    parser.add_argument("--mlflow-clients", type=int, default=4)
    parser.add_argument("--events", type=int, default=300_000, help="TensorBoard events")
    parser.add_argument("--aim-points", type=int, default=50_000,
                        help="points for Aim (its rate is what is compared)")
    args = parser.parse_args()
    endpoints = Endpoints.from_environ(os.environ)
    work, tls_dir = bench_workspace(endpoints, "tuneplane-peers-")
    admin = await asyncpg.connect(endpoints.database_url)
    database = "mlflow_bench"
    await admin.execute(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")
    await admin.execute(f"CREATE DATABASE {database}")
    await admin.close()

    source = work / "metrics.jsonl"
    steps = args.points // TAGS
    write_jsonl(source, range(steps), [f"metric/{k}" for k in range(TAGS)])
    # A projector group of its own, from the topic's end: no backlog of earlier runs.
    group = await group_at_end(endpoints.kafka_bootstrap, f"bench-peers-{time.time_ns()}")
    ingest = start_ingest(endpoints, tls_dir, free_port(), work / "ingest.log", env=group)
    projector: Process | None = None
    db = await asyncpg.connect(endpoints.database_url)
    try:
        projector = start_projector(endpoints, work / "projector.log", env=group)
        _, _, seconds = await end_to_end(endpoints, ingest.port, tls_dir, work, db, source,
                                         steps * TAGS, 10_000)
    finally:
        await db.close()
        if projector is not None:
            projector.stop()
        ingest.stop()
    ours = steps * TAGS / seconds
    server = mlflow_server(endpoints, work, database)
    try:
        assert server.port
        theirs, rows, sent = await asyncio.to_thread(mlflow_log_batch, server.port,
                                                     args.mlflow_points, args.mlflow_clients)
    finally:
        server.stop()
    print("curves end to end, file or client to PostgreSQL")
    print(f"  tuneplane  {ours:>12,.0f} points/s  (collector → ingest → Kafka → projector)")
    print(f"  mlflow     {theirs:>12,.0f} points/s  (log_batch, {args.mlflow_clients} clients, "
          "PostgreSQL backend)")
    print(f"  ratio      {ours / theirs:.1f}x")
    print("a batch retried after a lost reply")
    print(f"  mlflow     {sent} points sent twice with new timestamps: {rows} rows stored")
    print("  tuneplane  the same identity is stored once (tests/faults: duplicated 0)")
    path = work / "tb" / "events.out.tfevents.1.peers"
    path.parent.mkdir()
    path.write_bytes(events(0, args.events))
    count, their_time = read_with_tensorboard(path)
    assert count == args.events
    my_time = read_with_ours(path, work / "tb-read")
    print(f"TensorBoard event files, {args.events:,} scalar events")
    print(f"  tensorboard {count / their_time:>11,.0f} events/s  (EventFileLoader, parse only)")
    print(f"  tuneplane   {count / my_time:>11,.0f} events/s  (the collector: framing, CRC-32C, "
          "columns, sealed in its spool)")
    print(f"  ratio       {their_time / my_time:.1f}x")
    await aim_side_by_side(endpoints, work, ours, args.aim_points)


async def aim_side_by_side(endpoints: Endpoints, work: Path, ours: float, points: int) -> None:
    aim_rate, length, run_hash = aim_peer.track(work / "aim", points)
    print("curves taken in, Aim")
    print(f"  tuneplane  {ours:>12,.0f} points/s  (end to end, above)")
    print(f"  aim        {aim_rate:>12,.0f} points/s  (Run.track in the training process, "
          "RocksDB)")
    print(f"  ratio      {ours / aim_rate:.1f}x")
    aim_seconds, values = aim_peer.read(work / "aim", run_hash, 20)
    run_id = f"bench-peers-query-{time.time_ns()}"
    await fill(endpoints.database_url, run_id)
    token = await viewer_token(endpoints)
    web = start_web()
    try:
        async with api_client(web, token) as client:
            url = f"/api/v1/runs/{run_id}/attempts/1/scalars"
            params: dict[str, str | int] = {"member": "rank-0", "source": "train",
                                            "tag": "big", "max_points": 2000, "step_min": 0,
                                            "step_max": length - 1}
            await timed(client, url, params, 3)
            p50, _, returned = await timed(client, url, params, 20)
    finally:
        web.stop()
    print(f"one series of {length:,} points read for a chart, p50 of 20")
    print(f"  tuneplane  {p50:>9.1f} ms  ({returned:,} points or buckets: min/max/last, exact "
          "counts; HTTP, token checked)")
    print(f"  aim        {aim_seconds * 1000:>9.1f} ms  ({values:,} values: every point; "
          "SDK in process)")
    print(f"  ratio      {aim_seconds * 1000 / p50:.1f}x")


if __name__ == "__main__":
    asyncio.run(main())
