"""The durability table's rows, end to end on the real services (collector → ingest → Kafka
→ projector → PostgreSQL), each ending in exact counts: points in the source, points
stored, no duplicate (the projectors' offsets past the last batch first)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import asyncpg

from tests.support.credentials import workload_token
from tests.support.environment import Endpoints
from tests.support.kafka import projected_to_end
from tests.support.processes import Process, collector_args, run_collector
from tests.support.readmodels import curve_points, wait_for_points
from tuneplane.telemetry.v1.identity import MemberKey, SeriesKey
from tuneplane.web.read import listings, series_read


def unstamped(path: Path, steps: range, *, mode: str = "w") -> dict[int, float]:
    """JSONL lines as W&B and MLflow users log them, with no wall time; step → value."""
    truth = {s: s / 4 for s in steps}
    with path.open(mode) as out:
        out.writelines(json.dumps({"step": s, "metrics": {"loss": v}}) + "\n"
                       for s, v in truth.items())
    return truth


async def stored_once(db: asyncpg.Connection, bootstrap: str, run_id: str,
                      truth: dict[int, float]) -> None:
    """The run holds each step of ``truth`` once with its value, and nothing else."""
    assert await wait_for_points(db, run_id, len(truth)) == len(truth)
    await projected_to_end(bootstrap)  # a duplicate, if any, is stored by now
    points = await curve_points(db, run_id)
    steps = [step for _, _, _, step, _ in points]
    assert len(steps) == len(set(steps)) == len(truth)  # no duplicate
    assert {step: value for _, _, _, step, value in points} == truth


async def test_lines_without_wall_time_are_stamped_when_read_and_said_so(
        initialised: Endpoints, ingest: Process, projector: Process, tls_dir: Path,
        tmp_path: Path, run_id: str, db: asyncpg.Connection) -> None:
    member = MemberKey(run_id, 1, "rank-0")
    path = tmp_path / "metrics.jsonl"
    truth = unstamped(path, range(3000))
    token = workload_token(initialised, member, tmp_path / "token")
    before = time.time()
    done = run_collector(collector_args(ingest.port, tls_dir, token, member,
                                        tmp_path / "spool", {"train": path}))
    after = time.time()
    assert done.returncode == 0, done.stderr
    assert "wall_time" not in done.stderr  # no line refused
    await stored_once(db, initialised.kafka_bootstrap, run_id, truth)
    walls = await db.fetch("""SELECT c.walls_read, w FROM curve_chunks c
                              JOIN series s USING (series_id), unnest(c.wall_times) AS w
                              WHERE s.run_id = $1""", run_id)
    assert {r["walls_read"] for r in walls} == {True}
    assert all(before <= r["w"] <= after for r in walls)  # the collector's clock, reading
    (listed,) = await listings.series(db, run_id, 1, member=None, source=None, limit=10)
    assert (listed["tag"], listed["points"], listed["wall_time"]) == ("loss", 3000, "read")
    read = await series_read.read(db, SeriesKey(member, "train", "", "loss"), None, None,
                                  100, 200_000, purge=False)
    assert read is not None
    assert (read.wall_time, read.answer.points_in_range) == ("read", 3000)


async def test_a_copytruncated_source_is_read_again_and_every_line_stored_once(
        initialised: Endpoints, ingest: Process, projector: Process, tls_dir: Path,
        tmp_path: Path, run_id: str, db: asyncpg.Connection) -> None:
    """The table's row: 3,000 lines read and stored, the file truncated and 1,000 new lines
    written (logrotate's copytruncate), then a collector again: 4,000 stored, once each."""
    member = MemberKey(run_id, 1, "rank-0")
    path = tmp_path / "metrics.jsonl"
    truth = unstamped(path, range(3000))
    token = workload_token(initialised, member, tmp_path / "token")
    args = collector_args(ingest.port, tls_dir, token, member, tmp_path / "spool",
                          {"train": path})
    assert run_collector(args).returncode == 0
    await stored_once(db, initialised.kafka_bootstrap, run_id, truth)
    path.write_bytes(b"")  # truncated in place, as copytruncate does
    truth |= unstamped(path, range(3000, 4000), mode="a")
    again = run_collector(args)
    assert again.returncode == 0, again.stderr
    assert again.stderr.count("truncated below the offset read to") == 1, again.stderr
    await stored_once(db, initialised.kafka_bootstrap, run_id, truth)
