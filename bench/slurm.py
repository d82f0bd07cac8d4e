"""What launching through Tuneplane adds to a Slurm job, on the local cluster.

    eval "$(scripts/services up)"; eval "$(scripts/slurm up)"
    uv run python bench/slurm.py [--rounds 3] [--steps 2000] [--seconds 3]

Each round runs the same two-task training job (tests/slurm/training.py: TensorBoard and
JSONL, --steps in --seconds) twice, as the same unprivileged user: once submitted with plain
``sbatch`` (the peer: no telemetry), once launched with ``tuneplane-control launch --backend
slurm`` (control's default 2 s poll). It prints, per round and as medians: the plain job's
submit → COMPLETED; the launch's launch → attempt finished, and its parts: launch →
submitted (control's poll), submitted → every collector redeemed (artifact verified on the
node, collector started), launch → first point stored, and the training's end → the attempt
finished (read to the end, drained, reported, followed). Needs root (it makes the user).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

import asyncpg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.collector_binary import HOST_TARGET
from tests.support.collector_binary import artifact as collector_artifact
from tests.support.environment import Endpoints, bench_workspace, free_port
from tests.support.processes import start_ingest, start_projector
from tests.support.slurm import Tenant, launch, slurm_control, tenant
from tests.support.users import SYSTEM_PYTHON

INTEGRATION = {"version": 1, "sources": [
    {"id": "tb-0", "kind": "tensorboard", "path": "rank-0/tb", "owner": "rank-0"},
    {"id": "train", "kind": "jsonl", "path": "rank-0/metrics.jsonl", "owner": "rank-0"},
    {"id": "tb-1", "kind": "tensorboard", "path": "rank-1/tb", "owner": "rank-1"},
    {"id": "eval", "kind": "jsonl", "path": "rank-1/eval.jsonl", "owner": "rank-1"}]}


def plain_job(who: Tenant, training: list[str]) -> float:
    """sbatch the training as ``who``, two tasks on one node; seconds to COMPLETED."""
    script = (f"#!/bin/sh\nexport TMPDIR={who.scratch}\nmkdir -p \"$TMPDIR/plain-$SLURM_JOB_ID\"\n"
              f"cd \"$TMPDIR/plain-$SLURM_JOB_ID\"\nsrun sh -c 'export TUNEPLANE_MEMBER=rank-"
              f"$SLURM_PROCID; exec \"$@\"' task {' '.join(training)}\n")
    started = time.monotonic()
    job = subprocess.run(["sbatch", "--parsable", f"--uid={who.user.pw_uid}",
                          f"--gid={who.user.pw_gid}", "--nodes=1", "--ntasks-per-node=2",
                          "--output=/dev/null", "--chdir=/tmp"], input=script, text=True,
                         capture_output=True, check=True).stdout.strip()
    while True:
        jobs = json.loads(subprocess.run(["squeue", "--json", "--states=all"],
                                         capture_output=True, text=True, check=True).stdout)
        state = next((j["job_state"] for j in jobs["jobs"] if str(j["job_id"]) == job), "")
        if state in ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT"):
            assert state == "COMPLETED", f"plain job {job} ended {state}"
            return time.monotonic() - started
        time.sleep(0.05)


async def launched(db: asyncpg.Connection, endpoints: Endpoints, who: Tenant,
                   training: list[str], points: int) -> dict[str, float]:
    """Launch the training through control; the moments that matter, in seconds."""
    run_id = f"bench-slurm-{uuid.uuid4().hex[:8]}"
    started = time.monotonic()
    launch(endpoints, run_id, who, INTEGRATION, training[2:], "--tasks-per-node", "2")
    seen: dict[str, float] = {}
    while "finished" not in seen:
        row = await db.fetchrow(
            "SELECT l.state, l.job_id, a.state AS attempt, (SELECT count(*) FROM "
            "slurm_collectors c WHERE c.launch_id = l.launch_id) AS redeemed, (SELECT "
            "coalesce(sum(k.n), 0) FROM series s JOIN curve_chunks k USING (series_id) WHERE "
            "s.run_id = l.run_id) AS stored FROM slurm_launches l JOIN attempts a ON "
            "a.run_id = l.run_id AND a.attempt = l.attempt WHERE l.run_id = $1", run_id)
        now = time.monotonic() - started
        if row is not None:
            if row["job_id"] is not None:
                seen.setdefault("submitted", now)
            if row["redeemed"]:
                seen.setdefault("redeemed", now)
            if row["stored"]:
                seen.setdefault("first point", now)
            if row["attempt"] != "pending" and row["attempt"] != "running":
                assert row["attempt"] == "finished", row
                seen["finished"] = now
                seen["stored"] = float(row["stored"])
        await asyncio.sleep(0.05)
    deadline = time.monotonic() + 60
    while await db.fetchval("SELECT coalesce(sum(k.n), 0) FROM series s JOIN curve_chunks k "
                            "USING (series_id) WHERE s.run_id = $1", run_id) < points:
        assert time.monotonic() < deadline, f"{run_id}: not every point stored"
        await asyncio.sleep(0.1)
    return seen


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()
    endpoints = Endpoints.from_environ(os.environ)
    work, tls_dir = bench_workspace(endpoints, "tuneplane-bench-slurm-")
    artifact = collector_artifact(HOST_TARGET, work / "artifacts")  # scripts/collector-binary
    ingest = start_ingest(endpoints, tls_dir, free_port(), work / "ingest.log")
    projector = start_projector(endpoints, work / "projector.log")
    db = await asyncpg.connect(endpoints.database_url)
    rows: list[tuple[float, dict[str, float]]] = []
    try:
        with tenant(artifact, tls_dir) as who, \
                slurm_control(tls_dir, ingest, who, work / "control.log",
                              "--slurm-poll-seconds", "2"):
            training = [str(SYSTEM_PYTHON), str(who.training), "--steps", str(args.steps),
                        "--seconds", str(args.seconds)]
            for round_ in range(1, args.rounds + 1):
                plain = plain_job(who, training)
                ours = await launched(db, endpoints, who, training, 4 * args.steps)
                rows.append((plain, ours))
                print(f"round {round_}: plain sbatch {plain:.2f} s; launched {ours['finished']:.2f}"
                      f" s (submitted {ours['submitted']:.2f}, collectors ready "
                      f"{ours['redeemed']:.2f}, first point {ours['first point']:.2f}), "
                      f"{ours['stored']:.0f} points", flush=True)
    finally:
        await db.close()
        projector.stop()
        ingest.stop()
    median = statistics.median
    plain_m = median(p for p, _ in rows)
    ours_m = median(o["finished"] for _, o in rows)
    print(f"\nmedians of {len(rows)} rounds ({args.steps} steps x 2 tasks in {args.seconds:g} s):")
    print(f"  plain sbatch, submit -> COMPLETED          {plain_m:6.2f} s")
    print(f"  tuneplane launch -> attempt finished       {ours_m:6.2f} s  "
          f"(+{ours_m - plain_m:.2f} s, {ours_m / plain_m:.2f}x)")
    for key in ("submitted", "redeemed", "first point"):
        print(f"  launch -> {key:<31} {median(o[key] for _, o in rows):6.2f} s")


if __name__ == "__main__":
    asyncio.run(main())
