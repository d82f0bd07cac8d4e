"""TensorBoard conformance end to end, on the collector binary of each target (aarch64 under
qemu): log directories written by real writers go through
collector → ingest → Kafka → projector → PostgreSQL → tuneplane-web, and every (run path,
tag) comes back as its own series equal to what TensorBoard itself reads from the same
files: raw, to its event file loader; with ``semantics=tensorboard``, to its multiplexer
after its purges (restarts, and out-of-order steps in old-style files without a
file_version, written with TensorBoard's record writer). The writers: tensorboardX,
torch's ``torch.utils.tensorboard`` and TensorBoard's own ``tensorboard.summary.Writer``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest

from tests.support import collector_binary
from tests.support.collector_binary import TARGETS
from tests.support.credentials import workload_token
from tests.support.environment import Endpoints
from tests.support.processes import Process, collector_args, run_collector
from tests.support.readmodels import curve_points, projected_behind
from tests.support.truth import (
    Run,
    assert_exact,
    tensorboard_purged,
    tensorboard_runs,
    write_jsonl,
    write_old_style_logdir,
)
from tests.support.writers import (
    tensorboard_writer_resumed,
    tensorboardx_resumed_once,
    tensorboardx_with_restarts,
    torch_with_restarts,
)
from tuneplane.telemetry.v1.identity import MemberKey

Points = list[tuple[int, float, float]]

STORED = """
SELECT s.run_path, s.tag, sum(c.n)::int FROM series s JOIN curve_chunks c USING (series_id)
WHERE s.run_id = $1 AND s.source = 'tb' GROUP BY 1, 2
"""


async def scalars(http: httpx.AsyncClient, url: str, run: Run, **extra: str) -> dict[str, Any]:
    answer = await http.get(f"{url}/scalars", params={
        "member": "rank-0", "source": "tb", "run_path": run[0], "tag": run[1],
        "max_points": 5000, **extra})
    assert answer.status_code == 200, answer.text
    data: dict[str, Any] = answer.json()
    assert data["reduced"] is False
    steps = [p[0] for p in data["points"]]
    assert steps == sorted(steps), "an answer is in step order"
    return data


def points(data: dict[str, Any]) -> Points:
    return sorted((s, w, v) for s, w, v in data["points"])


@pytest.mark.parametrize("target", TARGETS)
async def test_real_writers_series_equal_tensorboards_own_reading_raw_and_purged(
        initialised: Endpoints, ingest: Process, projector: Process, web: Process,
        user_token: str, tls_dir: Path, tmp_path: Path, run_id: str,
        db: asyncpg.Connection, target: str) -> None:
    logdir = tmp_path / "logs"
    tensorboardx_with_restarts(logdir)
    tensorboardx_resumed_once(logdir / "resumed")
    tensorboard_writer_resumed(logdir / "tb_writer")
    torch_with_restarts(logdir / "torch")
    write_old_style_logdir(logdir / "old")  # TensorBoard's record writer, no file_version
    raw, purged = tensorboard_runs(logdir), tensorboard_purged(logdir)
    written = {("", "loss"), ("lr_group/a", "lr_group"), ("lr_group/b", "lr_group"),
               ("resumed", "loss"), ("tb_writer", "eval/loss"), ("tb_writer", "eval/acc"),
               ("torch", "loss"), ("torch/lr_group_a", "lr_group"),
               ("torch/lr_group_b", "lr_group")}
    old = {("old", "loss"), ("old", "acc"), ("old/versioned", "loss"),
           ("old/upgraded", "loss"), ("old/kept", "loss")}
    assert set(raw) == set(purged) == written | old
    # What the writers did took effect in TensorBoard: tensorboardX's second START purged
    # the root run's 150..199 of the first writer (torch's its 120..199); their add_scalars
    # runs, the run resumed with a START that was its first, and tensorboard's writer (no
    # START) kept them all.
    assert len(raw[("", "loss")]) - len(purged[("", "loss")]) == 50
    assert len(raw[("torch", "loss")]) - len(purged[("torch", "loss")]) == 80  # torch's too
    for run in written - {("", "loss"), ("torch", "loss")}:
        assert purged[run] == raw[run], run
        assert len({s for s, _, _ in raw[run]}) < len(raw[run]), f"{run}: no step twice"
    for run in old:  # out-of-order steps (and, once versioned, STARTs) purged in each
        assert len(purged[run]) < len(raw[run]), run

    member = MemberKey(run_id, 1, "rank-0")
    token = workload_token(initialised, member, tmp_path / "token")
    # A JSONL file beside the log directory, read by the same collector.
    jsonl = write_jsonl(tmp_path / "metrics.jsonl", range(700), ["loss", "acc"])
    done = run_collector([*collector_args(ingest.port, tls_dir, token, member,
                                          tmp_path / "spool", {"train": tmp_path / "metrics.jsonl"},
                                          command=collector_binary.command(target)),
                          "--tensorboard", f"tb={logdir}", "--max-batch-points", "64"])
    assert done.returncode == 0, done.stderr
    total = sum(len(p) for p in raw.values()) + len(jsonl)
    assert f"{total} points and 1 rich records read" in done.stderr  # old's histogram
    await projected_behind(db, initialised.kafka_bootstrap, member)
    # Every batch is projected now, and nothing more is on its way: stored counts are final.
    stored = {(r["run_path"], r["tag"]): r["sum"] for r in await db.fetch(STORED, run_id)}
    assert stored == {run: len(p) for run, p in raw.items()}
    assert_exact(await curve_points(db, run_id), jsonl, "rank-0", "train")

    url = f"/api/v1/runs/{run_id}/attempts/1"
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{web.port}",
                                 headers={"Authorization": f"Bearer {user_token}"}) as http:
        listed = (await http.get(f"{url}/series", params={"source": "tb"})).json()
        assert {(s["run_path"], s["tag"]): s["points"] for s in listed} == stored
        for run in raw:
            inspected = await scalars(http, url, run)
            assert "semantics" not in inspected
            assert points(inspected) == sorted(raw[run]), run
            canonical = await scalars(http, url, run, semantics="tensorboard")
            assert canonical["semantics"] == "tensorboard"
            assert points(canonical) == sorted(purged[run]), run
            assert canonical["points_purged"] == len(raw[run]) - len(purged[run])
