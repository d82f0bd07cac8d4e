"""``tuneplane-client`` against the real tuneplane-web process, PostgreSQL and Kafka: runs
listed page by page and filtered, a series of more than a million points (NaN, infinities,
subnormals, a restart's repeated steps) read back bit-exact across the export's pages, as
Arrow, pandas and polars, and ``history`` side by side; clear errors for what is missing."""

from __future__ import annotations

import math
import random
import struct
import uuid

import asyncpg
import pytest

from tests.projector.test_stream import wait_ledger
from tests.support.environment import Endpoints
from tests.support.kafka import produce
from tests.support.processes import Process
from tuneplane.client import Client, ClientError
from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1.limits import MAX_BATCH_POINTS

#: More than one export page (a million points): the client follows the Link.
POINTS = 1_050_000


def values(count: int, seed: int) -> list[float]:
    """Float64 values of every kind: random bit patterns, NaN, infinities, subnormals."""
    rng = random.Random(seed)
    found = []
    for i in range(count):
        if i % 1000 == 7:
            found.append(rng.choice([math.nan, math.inf, -math.inf, 5e-324, -0.0]))
            continue
        bits = rng.getrandbits(64)
        value = struct.unpack("<d", struct.pack("<Q", bits))[0]
        found.append(value if math.isfinite(value) else rng.random())
    return found


def batches(run_id: str, tag: str, steps: list[int], vals: list[float],
            first: int = 1) -> list[pb.Batch]:
    """The series as a collector seals it, in batches of the most points allowed; sequence
    numbers from ``first``."""
    made = []
    for n, at in enumerate(range(0, len(steps), MAX_BATCH_POINTS)):
        part = slice(at, at + MAX_BATCH_POINTS)
        made.append(pb.Batch(
            identity=pb.BatchIdentity(run_id=run_id, attempt=1, member="rank-0",
                                      spool_epoch="e", sequence=first + n),
            sealed_at=1.7e9 + n,
            chunks=[pb.SeriesChunk(source="train", tag=tag, steps=steps[part],
                                   wall_times=[1.7e9 + s / 8 for s in steps[part]],
                                   values=vals[part])]))
    return made


def same(a: list[float], b: list[float]) -> bool:
    """Bit for bit (NaN equal to NaN, -0.0 not to 0.0)."""
    return len(a) == len(b) and all(struct.pack("<d", x) == struct.pack("<d", y)
                                    for x, y in zip(a, b, strict=True))


@pytest.mark.timeout(600)
async def test_a_million_point_series_reads_back_bit_exact_across_pages(
        initialised: Endpoints, projector: Process, db: asyncpg.Connection, base_url: str,
        user_token: str, monkeypatch: pytest.MonkeyPatch) -> None:
    run_id = f"client-{uuid.uuid4().hex[:8]}"
    # A restart: steps 0..N-1, then again from N-1000 (the stored order is the read order).
    steps = [*range(POINTS - 50_000), *range(POINTS - 51_000, POINTS - 1_000)]
    loss = values(len(steps), 1)
    acc = values(2000, 2)
    sealed = batches(run_id, "loss", steps, loss)
    sealed += batches(run_id, "acc", list(range(2000)), acc, first=len(sealed) + 1)
    await produce(initialised.kafka_bootstrap, sealed)
    await wait_ledger(db, run_id, len(sealed), seconds=300)

    with Client(base_url, user_token) as client:
        run = client.run(run_id)
        assert [a["attempt"] for a in run.attempts()] == [1]
        assert {s["tag"] for s in run.series()} == {"loss", "acc"}
        asked: list[str] = []
        ask = client.body

        def counted(path: str, params: dict[str, object] | None = None
                    ) -> tuple[bytes, str | None]:
            asked.append(path)
            return ask(path, params)
        monkeypatch.setattr(client, "body", counted)
        pages = list(run.iter_scalars("loss"))
        assert sum("scalars/export" in path for path in asked) == 2  # the Link followed
        monkeypatch.undo()
        table = run.scalars("loss")
        assert table.num_rows == len(steps)
        assert table.column("step").to_pylist() == steps
        assert same(table.column("value").to_pylist(), loss)
        assert table.column("wall_time").to_pylist() == [1.7e9 + s / 8 for s in steps]
        assert sum(p.num_rows for p in pages) == len(steps)
        frame = run.scalars("loss", frame="pandas")
        assert same(frame["value"].tolist(), loss)
        polars_frame = run.scalars("acc", frame="polars")
        assert same(polars_frame["value"].to_list(), acc)
        wide = run.history(["loss", "acc"])
        assert list(wide.columns) == ["step", "loss", "acc"]
        last = {s: v for s, v in zip(steps, loss, strict=True)}  # a repeated step: its last
        assert len(wide) == len(last)
        assert same(wide["loss"].tolist(), [last[s] for s in sorted(last)])
        with pytest.raises(ClientError, match="no series 'nope'"):
            run.scalars("nope")
        with pytest.raises(ClientError, match="404"):
            client.run(f"{run_id}-absent").attempts()


async def test_runs_are_listed_page_by_page_and_filtered(
        initialised: Endpoints, projector: Process, db: asyncpg.Connection, base_url: str,
        user_token: str, monkeypatch: pytest.MonkeyPatch) -> None:
    prefix = f"listed-{uuid.uuid4().hex[:6]}"
    made = [f"{prefix}-{i}" for i in range(5)]
    await produce(initialised.kafka_bootstrap,
                  [b for run_id in made for b in batches(run_id, "loss", [0, 1], [0.5, 0.25])])
    for run_id in made:
        await wait_ledger(db, run_id, 1)
    import tuneplane.client.client as module
    monkeypatch.setattr(module, "PAGE", 2)  # five runs: three pages
    with Client(base_url, user_token) as client:
        found = [r.run_id for r in client.runs(search=prefix, sort="run_id", descending=False)]
        assert found == made
        row = next(client.runs(search=made[3]))
        assert (row.run_id, row.project, row.points, row.state) == (made[3], "default", 2,
                                                                    "none")
        assert list(client.runs(search=prefix, project="no-such-project")) == []


def test_without_an_address_or_a_token_the_client_says_what_to_set(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TUNEPLANE_URL", raising=False)
    monkeypatch.delenv("TUNEPLANE_TOKEN", raising=False)
    with pytest.raises(ClientError, match="TUNEPLANE_URL"):
        Client()
    with pytest.raises(ClientError, match="TUNEPLANE_TOKEN"):
        Client("http://127.0.0.1:1")
    monkeypatch.setenv("TUNEPLANE_URL", "http://127.0.0.1:1/")
    monkeypatch.setenv("TUNEPLANE_TOKEN", "t")
    with Client() as client:
        assert client.url == "http://127.0.0.1:1"
        with pytest.raises(ClientError, match=r"http://127\.0\.0\.1:1: "):  # none listens
            client.run("r").attempts()
