"""The durability table's rows, end to end on the real services (collector → ingest → Kafka
→ projector → PostgreSQL), each ending in exact counts: points in the source, points
stored, no duplicate (the projectors' offsets past the last batch first)."""

from __future__ import annotations

import json
import shutil
import time
from collections import Counter
from pathlib import Path

import asyncpg

from tests.support import collector_binary, readmodels
from tests.support.collector_binary import HOST_TARGET
from tests.support.credentials import workload_token
from tests.support.environment import Endpoints
from tests.support.kafka import projected_to_end
from tests.support.processes import Process, collector_args, run_collector
from tests.support.readmodels import curve_points, wait_for_points
from tests.support.truth import Written, write_events
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
    walls = await readmodels.stored_points(db, run_id)
    assert {p.walls_read for p in walls} == {True}
    assert all(before <= p.wall_time <= after for p in walls)  # the collector's clock
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


def spool_began(spool: Path) -> dict[str, object]:
    """What ``spool status`` says of how the spool began (its ``resume`` summary)."""
    done = collector_binary.run(HOST_TARGET, "spool", "status", str(spool))
    assert done.returncode == 0, done.stderr
    status = json.loads(done.stdout)
    assert isinstance(status["resume"], dict), status
    return {**status["resume"], "events": [(e["event"], e["file"])
                                           for e in status["source_events"]]}


async def delivered_then_lost(endpoints: Endpoints, ingest: Process, tls_dir: Path,
                              tmp_path: Path, run_id: str, db: asyncpg.Connection,
                              lines: int) -> tuple[list[str], Path, dict[int, float]]:
    """``lines`` JSONL lines delivered and stored once, then the spool deleted (the host
    re-imaged): the collector's arguments (the same for the next), the file and its truth."""
    member = MemberKey(run_id, 1, "rank-0")
    path = tmp_path / "metrics.jsonl"
    truth = unstamped(path, range(lines))
    token = workload_token(endpoints, member, tmp_path / "token")
    args = collector_args(ingest.port, tls_dir, token, member, tmp_path / "spool",
                          {"train": path})
    assert run_collector(args).returncode == 0
    await stored_once(db, endpoints.kafka_bootstrap, run_id, truth)
    shutil.rmtree(tmp_path / "spool")
    return args, path, truth


async def test_a_destroyed_spool_doubles_nothing_and_reading_resumes_where_it_was_delivered(
        initialised: Endpoints, ingest: Process, projector: Process, tls_dir: Path,
        tmp_path: Path, run_id: str, db: asyncpg.Connection) -> None:
    """The table's first row: 3,000 lines delivered, the spool deleted (the host re-imaged)
    and 1,000 lines more written, then a new collector with a new spool: 4,000 stored, once
    each. The new spool says it followed the first and where it resumed."""
    args, path, truth = await delivered_then_lost(initialised, ingest, tls_dir, tmp_path,
                                                  run_id, db, 3000)
    first_epoch = (await db.fetchval("SELECT batch_id FROM batch_ledger WHERE run_id = $1 "
                                     "LIMIT 1", run_id)).rpartition("-")[0]
    spool = tmp_path / "spool"
    truth |= unstamped(path, range(3000, 4000), mode="a")
    again = run_collector(args)
    assert again.returncode == 0, again.stderr
    assert "follows 1 earlier spools" in again.stderr, again.stderr
    await stored_once(db, initialised.kafka_bootstrap, run_id, truth)
    began = spool_began(spool)
    assert (began["checkpoints"], began["resumed"], began["gaps"]) == (1, 1, 0), began
    assert began["earlier_epochs"] == [first_epoch]
    assert began["events"] == [("resumed", "")]


async def test_a_destroyed_spool_whose_file_was_rotated_away_names_the_gap(
        initialised: Endpoints, ingest: Process, projector: Process, tls_dir: Path,
        tmp_path: Path, run_id: str, db: asyncpg.Connection) -> None:
    """The file the lost spool read is gone (rotated away while no collector ran): the new
    one at its path is read from its start, and the gap past the checkpoint is said."""
    args, path, truth = await delivered_then_lost(initialised, ingest, tls_dir, tmp_path,
                                                  run_id, db, 2000)
    size = path.stat().st_size
    spool = tmp_path / "spool"
    path.rename(tmp_path / "metrics.jsonl.1")
    truth |= unstamped(path, range(5000, 5500))
    again = run_collector(args)
    assert again.returncode == 0, again.stderr
    assert f"read it to byte {size}" in again.stderr, again.stderr
    await stored_once(db, initialised.kafka_bootstrap, run_id, truth)
    began = spool_began(spool)
    assert (began["checkpoints"], began["resumed"], began["gaps"]) == (1, 0, 1), began


async def test_a_destroyed_spool_of_a_log_directory_resumes_each_event_file(
        initialised: Endpoints, ingest: Process, projector: Process, tls_dir: Path,
        tmp_path: Path, run_id: str, db: asyncpg.Connection) -> None:
    """TensorBoard: two runs' event files delivered, the spool deleted, one file grown and a
    third made; the new spool resumes both where they were delivered and reads the third:
    every step stored once, each tag as TensorBoard loads it."""
    member = MemberKey(run_id, 1, "rank-0")
    logdir = tmp_path / "logs"
    first = logdir / "train" / "events.out.tfevents.1.host"
    written: list[Written] = [(s, {"loss": s / 8}) for s in range(1500)]
    write_events(first, written, file_version="brain.Event:2")
    write_events(logdir / "eval" / "events.out.tfevents.1.host",
                 [(s, {"acc": s / 16}) for s in range(400)], file_version="brain.Event:2")
    token = workload_token(initialised, member, tmp_path / "token")
    spool = tmp_path / "spool"
    args = [*collector_args(ingest.port, tls_dir, token, member, spool, {}),
            "--tensorboard", f"tb={logdir}"]
    assert run_collector(args).returncode == 0
    assert await wait_for_points(db, run_id, 1900) == 1900
    shutil.rmtree(spool)
    write_events(first, [*written, *((s, {"loss": s / 8}) for s in range(1500, 2000))],
                 file_version="brain.Event:2")  # the same bytes, and more after them
    write_events(logdir / "eval" / "events.out.tfevents.2.host",
                 [(s, {"acc": s / 16}) for s in range(400, 700)])
    again = run_collector(args)
    assert again.returncode == 0, again.stderr
    assert await wait_for_points(db, run_id, 2700) == 2700
    await projected_to_end(initialised.kafka_bootstrap)
    points = await curve_points(db, run_id)
    seen = Counter((tag, step) for _, _, tag, step, _ in points)
    assert [key for key, n in seen.items() if n > 1] == []  # no duplicate
    assert sorted(seen) == sorted([*(("loss", s) for s in range(2000)),
                                   *(("acc", s) for s in range(700))])
    began = spool_began(spool)
    assert (began["checkpoints"], began["resumed"], began["gaps"]) == (2, 2, 0), began
