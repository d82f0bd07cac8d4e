"""Hyperparameters end to end: real TensorBoard HParams event files (TensorBoard's own
``hparams_pb``, tensorboardX's ``add_hparams``) and JSONL config records go through
collector → ingest → Kafka → projector → PostgreSQL → tuneplane-web, and the runs table
shows each run's hyperparameters as TensorBoard itself reads them from the same files, with
the final metric beside them, sorted and filtered by them; and the Runs page draws them as
parallel coordinates (.artifacts/hparams-parallel.png, beside TensorBoard's HParams
dashboard on the same files)."""

from __future__ import annotations

import json
import struct
import uuid
from pathlib import Path
from typing import Any

import asyncpg
import httpx
from tensorboard.compat.proto import event_pb2, summary_pb2
from tensorboard.plugins.hparams.summary_v2 import hparams_pb
from tensorboard.summary.writer.event_file_writer import EventFileWriter

from tests.collector.binary.test_config import hparams_truth
from tests.support.browser import ARTIFACTS, PASSWORD, opened_page, sign_in
from tests.support.credentials import add_user, workload_token
from tests.support.environment import Endpoints
from tests.support.processes import Process, collector_args, run_collector
from tests.support.readmodels import projected_behind
from tests.support.tensorboardx import summary_writer
from tuneplane.controlplane import passwords
from tuneplane.telemetry.v1.identity import MemberKey

#: Each run's hyperparameters and its last loss; run 0 is logged with tensorboardX.
SWEEP = [({"lr": 0.1, "optimizer": "sgd"}, 0.9), ({"lr": 0.001, "optimizer": "adam"}, 0.4),
         ({"lr": 0.01, "optimizer": "adam"}, 0.2)]


def float32(value: float) -> float:
    """What a TensorBoard scalar (a float32 ``simple_value``) holds of ``value``."""
    return float(struct.unpack("<f", struct.pack("<f", value))[0])


def write_run(logdir: Path, index: int, hparams: dict[str, Any], last: float) -> None:
    losses = [2.0, 1.0, last]
    if index == 0:  # tensorboardX: the session in a directory of its own, its metric there
        writer = summary_writer(str(logdir))
        for step, loss in enumerate(losses):
            writer.add_scalar("loss", loss, step)
        writer.add_hparams(hparams, {"hparam/loss": last})
        writer.close()
        return
    writer = EventFileWriter(str(logdir))  # TensorBoard's own, as hp.hparams writes it
    writer.add_event(event_pb2.Event(step=0, wall_time=1.7e9, summary=hparams_pb(
        hparams, trial_id=f"trial-{index}", start_time_secs=1.7e9)))
    for step, loss in enumerate(losses):
        writer.add_event(event_pb2.Event(step=step, wall_time=1.7e9 + step, summary=(
            summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag="loss",
                                                                 simple_value=loss)]))))
    writer.close()


async def test_hyperparameters_from_real_writers_reach_the_runs_table(
        initialised: Endpoints, ingest: Process, projector: Process, web: Process,
        user_token: str, tls_dir: Path, tmp_path: Path, db: asyncpg.Connection) -> None:
    tag = uuid.uuid4().hex[:8]
    runs = [f"hp-{tag}-{i}" for i in range(len(SWEEP))]
    for i, (run_id, (hparams, last)) in enumerate(zip(runs, SWEEP, strict=True)):
        logdir = tmp_path / run_id / "tb"
        write_run(logdir, i, hparams, last)
        truth = {r["key"]: r["value"][1] for r in hparams_truth(logdir)}
        assert truth == hparams  # TensorBoard reads back what was written
        jsonl = tmp_path / run_id / "metrics.jsonl"
        jsonl.write_text(json.dumps({"config": {"data": {"batch_size": 32 * (i + 1)}}}) + "\n"
                         + json.dumps({"step": 0, "wall_time": 1.7e9, "metrics": {"acc": 0.5}})
                         + "\n")
        member = MemberKey(run_id, 1, "rank-0")
        token = workload_token(initialised, member, tmp_path / run_id / "token")
        done = run_collector([*collector_args(ingest.port, tls_dir, token, member,
                                              tmp_path / run_id / "spool", {"train": jsonl}),
                              "--tensorboard", f"tb={logdir}"])
        assert done.returncode == 0, done.stderr
        await projected_behind(db, initialised.kafka_bootstrap, member)

    columns = ["config:lr", "config:optimizer", "config:data.batch_size", "metric:loss:last"]
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{web.port}/api/v1",
                                 headers={"Authorization": f"Bearer {user_token}"}) as http:
        async def table(**params: Any) -> list[tuple[str, list[Any]]]:
            answer = await http.get("/run-table", params={"q": tag, "col": columns, **params})
            assert answer.status_code == 200, answer.text
            return [(r["run_id"], r["columns"]) for r in answer.json()["runs"]]

        by_lr = await table(sort="col0", dir="asc")
        assert by_lr == [(runs[i], [SWEEP[i][0]["lr"], SWEEP[i][0]["optimizer"],
                                    32.0 * (i + 1), float32(SWEEP[i][1])]) for i in (1, 2, 0)]
        assert [r for r, _ in await table(sort="col3", dir="asc")] == [runs[2], runs[1],
                                                                       runs[0]]
        assert [r for r, _ in await table(filter="1=adam", sort="col2")] == [runs[2], runs[1]]
        offered = (await http.get("/run-columns")).json()
        assert {"lr", "optimizer", "data.batch_size"} <= set(offered["config"])
        assert {"loss", "hparam/loss", "acc"} <= set(offered["metrics"])
    origins = {(r["run_id"], r["key"]): r["origin"] for r in await db.fetch(
        "SELECT run_id, key, origin FROM run_config WHERE run_id = ANY($1)", runs)}
    assert origins[(runs[0], "lr")] == "hparams"
    assert origins[(runs[1], "data.batch_size")] == "jsonl"

    user = await add_user(db, "viewer", roles={"default": "viewer"})
    await passwords.set_password(db, user, PASSWORD)
    view = "&".join([f"q={tag}", "sort=col3", "dir=asc", "parallel=1",
                     *(f"col={c}" for c in ["config:lr", "config:optimizer",
                                             "config:data.batch_size", "metric:loss:last"])])
    async with opened_page(width=1440, height=900) as opened:
        page = opened.page
        await page.goto(f"http://localhost:{web.port}/runs?{view}")
        await sign_in(page, user, PASSWORD)
        await page.locator("#parallel-view svg").wait_for()
        assert await page.locator("#parallel-view path[data-run]").count() == len(runs)
        await page.screenshot(path=str(ARTIFACTS / "hparams-parallel.png"), full_page=True)
