"""Late delivery, end to end on the real services: a collector that could not reach ingest
within its drain leaves its batches spooled; after the attempt ended, ingest refuses the
workload token, and `tuneplane-collector deliver SPOOL` under a deliver-only credential
(`tuneplane-admin delivery-token`, for exactly what the spool holds) delivers every point
once, listed as late on the run page. A delivery killed halfway goes on under the same
credential; a credential for another tree is refused before anything is sent."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import asyncpg

from tests.ingest.test_attempt_end import ended
from tests.support import collector_binary
from tests.support.collector_binary import HOST_TARGET, read_to, run_until, spool_status
from tests.support.credentials import workload_token
from tests.support.environment import Endpoints, run_admin
from tests.support.kafka import projected_to_end
from tests.support.processes import Process, collector_args, refused_then_stopped
from tests.support.readmodels import curve_points, wait_for_points
from tests.support.truth import write_jsonl
from tuneplane.web.read import listings

LINES = 3000


def spooled(tmp_path: Path, args: list[str], source: Path) -> None:
    """``run`` against an ingest that is not there until it read ``source`` to its end, then
    SIGTERM: everything read stays spooled."""
    unreachable = [("localhost:1" if a.startswith("localhost:") else a) for a in args]
    ends = [source.stat().st_size]
    done, held = run_until(unreachable, tmp_path / "spool",
                           lambda positions: read_to(positions, ends))
    assert held, done.stderr
    assert done.returncode == 3, done.stderr  # batches left in the spool
    pending = spool_status(tmp_path / "spool")["pending"]
    assert isinstance(pending, dict)
    assert (pending["batches"], pending["points"]) == (LINES // 250, LINES)


def deliver(spool: Path, *extra: str, command: list[str] | None = None,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*(command or collector_binary.command(HOST_TARGET)), "deliver",
                           str(spool), *extra], capture_output=True, text=True, timeout=120,
                          check=False, env={**os.environ, **(env or {})})


def credential(initialised: Endpoints, asked: dict[str, object], out: Path) -> Path:
    run_admin(initialised, "delivery-token", "--run", str(asked["run"]), "--attempt",
              str(asked["attempt"]), "--member", str(asked["member"]), "--epoch",
              str(asked["epoch"]), "--batches", str(asked["batches"]), "--root",
              str(asked["root"]), "--out", str(out))
    assert out.stat().st_mode & 0o777 == 0o600
    return out


async def test_a_spool_left_after_the_attempt_ended_is_delivered_late_exactly_once(
        initialised: Endpoints, ingest: Process, projector: Process, tls_dir: Path,
        tmp_path: Path, run_id: str, db: asyncpg.Connection) -> None:
    member = await ended(db, run_id, "finished", seconds_ago=600)
    source = tmp_path / "metrics.jsonl"
    write_jsonl(source, range(LINES), ["loss"])
    token = workload_token(initialised, member, tmp_path / "token")
    args = collector_args(ingest.port, tls_dir, token, member, tmp_path / "spool",
                          {"train": source}, "--max-batch-points", "250")
    spooled(tmp_path, args, source)
    # The workload token is refused now: the attempt ended beyond the drain window.
    assert refused_then_stopped(args, tmp_path / "again.log") == 3  # batches left
    spool = tmp_path / "spool"
    said = deliver(spool)
    assert said.returncode == 0, said.stderr
    assert "tuneplane-admin delivery-token --run" in said.stdout
    asked = json.loads(deliver(spool, "--json").stdout)
    assert (asked["run"], asked["member"], asked["batches"]) == (run_id, "rank-0", 12)
    assert asked["pending"] == {"batches": 12, "points": LINES}
    target = ["--target", f"localhost:{ingest.port}", "--ca-file", str(tls_dir / "ca.pem")]
    # Killed after three batches are delivered (and deleted): the rest goes on after.
    cred = credential(initialised, asked, tmp_path / "delivery.token")
    killed = deliver(spool, *target, "--token-file", str(cred),
                     command=[str(collector_binary.failpoints_binary())],
                     env={"TUNEPLANE_COLLECTOR_FAILPOINTS": "delete=3"})
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert spool_status(spool)["pending"]["batches"] == 9  # type: ignore[index]
    done = deliver(spool, *target, "--token-file", str(cred))
    assert done.returncode == 0, done.stderr
    assert "delivered 9 batches" in done.stdout
    assert deliver(spool).stdout.strip().endswith("nothing to deliver")
    assert await wait_for_points(db, run_id, LINES) == LINES
    await projected_to_end(initialised.kafka_bootstrap)  # a duplicate would be stored by now
    steps = [step for _, _, _, step, _ in await curve_points(db, run_id)]
    assert sorted(steps) == list(range(LINES))  # each once
    late = await listings.late(db, run_id, 1, 100)
    assert len(late) == 12
    assert sum(b["points"] for b in late) == LINES
    (attempt,) = await listings.attempts(db, run_id)
    assert attempt["late_batches"] == attempt["batches"] == 12


async def test_a_credential_for_another_tree_is_refused_before_anything_is_sent(
        initialised: Endpoints, ingest: Process, tls_dir: Path, tmp_path: Path, run_id: str,
        db: asyncpg.Connection) -> None:
    member = await ended(db, run_id, "failed", seconds_ago=600)
    source = tmp_path / "metrics.jsonl"
    write_jsonl(source, range(LINES), ["loss"])
    token = workload_token(initialised, member, tmp_path / "token")
    spooled(tmp_path, collector_args(ingest.port, tls_dir, token, member, tmp_path / "spool",
                                     {"train": source}, "--max-batch-points", "250"), source)
    spool = tmp_path / "spool"
    asked = json.loads(deliver(spool, "--json").stdout)
    target = ["--target", f"localhost:{ingest.port}", "--ca-file", str(tls_dir / "ca.pem")]
    other = credential(initialised, {**asked, "batches": 11}, tmp_path / "other.token")
    refused = deliver(spool, *target, "--token-file", str(other))
    assert refused.returncode == 2
    assert "it was made for another spool, or before this one changed" in refused.stderr
    refused = deliver(spool, *target, "--token-file", str(token))  # a workload token
    assert refused.returncode == 2
    assert "holds a workload token, not a deliver-only credential" in refused.stderr
    assert spool_status(spool)["pending"]["batches"] == 12  # type: ignore[index]
