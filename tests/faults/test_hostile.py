"""Hostile tenants on the data path: one workload token sends every kind of batch the
projector could not store, a thousand times over; ingest refuses each one naming the field,
and another run's telemetry still arrives with no projector exiting. Poison written to
Kafka around ingest (as from before the check) is passed by a fresh projector group. An
attempt at its series bound is refused new series at ingest, and still logs its own."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import asyncpg
import grpc
import pytest

from tests.support.calls import auth, push
from tests.support.environment import Endpoints, free_port
from tests.support.kafka import group_at_end, produce, produce_payloads, projected_to_end
from tests.support.processes import Process, start_ingest, start_projector
from tests.support.readmodels import wait_for_points
from tests.support.truth import member_batch
from tuneplane.common.tokens import TokenSigner
from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1 import telemetry_pb2_grpc as pb_grpc
from tuneplane.telemetry.v1.identity import BatchKey, MemberKey
from tuneplane.telemetry.v1.limits import MAX_BATCH_RICH, MAX_BATCH_SERIES

#: A placeholder of seven ASCII bytes; the same length with one byte made invalid UTF-8.
MARK, BROKEN = "QQMARKQ", b"QQ\xffARKQ"


def craft(edit: Callable[[pb.Batch], object], *, broken: bool = False,
          ) -> Callable[[MemberKey, int], bytes]:
    """A batch of ``member`` changed by ``edit``; ``broken``: its MARK made invalid UTF-8."""
    def make(member: MemberKey, sequence: int) -> bytes:
        batch = member_batch(member, sequence, 4, tags=1)
        edit(batch)
        data = batch.SerializeToString()
        return data.replace(MARK.encode(), BROKEN) if broken else data
    return make


def rich(**fields: object) -> Callable[[pb.Batch], object]:
    return lambda b: b.rich.add(**{"source": "train", "tag": "img", "kind": 1, **fields})


def marker(**fields: object) -> Callable[[pb.Batch], object]:
    return lambda b: b.session_starts.add(**{"source": "train", **fields})


def chunk(field: str, value: str) -> Callable[[pb.Batch], object]:
    return lambda b: setattr(b.chunks[0], field, value)


def many_series(b: pb.Batch) -> None:
    for i in range(MAX_BATCH_SERIES + 1):
        b.chunks.add(source="train", tag=f"t{i}", steps=[1], wall_times=[1.0], values=[1.0])


def many_rich(b: pb.Batch) -> None:
    for _ in range(MAX_BATCH_RICH + 1):
        b.rich.add(source="train", tag="txt", kind=pb.RichRecord.KIND_TEXT)


#: (refusal class, how a batch of it is made, what the refusal names, batches sent)
CASES = [
    ("unknown rich kind", craft(rich(kind=7)), "rich[0] (train/img).kind 7 is not a kind", 1000),
    ("NUL in a chunk's source", craft(chunk("source", "tr\x00ain")),
     "chunks[0].source holds the control character '\\x00'", 1000),
    ("NUL in a chunk's tag", craft(chunk("tag", "lo\x00ss")),
     "chunks[0].tag holds the control character '\\x00'", 1000),
    ("NUL in a rich record's source", craft(rich(source="s\x00")),
     "rich[0].source holds the control character", 1000),
    ("NUL in a rich record's tag", craft(rich(tag="i\x00mg")),
     "rich[0].tag holds the control character", 1000),
    ("NUL in a plugin name", craft(rich(plugin_name="images\x00")),
     "rich[0] (train/img).plugin_name holds the control character", 1000),
    ("NUL in a rich record's file", craft(rich(file="ev\x00ents")),
     "rich[0] (train/img).file holds the control character", 1000),
    ("NUL in a marker's source", craft(marker(source="tb\x00")),
     "session_starts[0].source holds the control character", 1000),
    ("NUL in a marker's file", craft(marker(file="f\x00")),
     "session_starts[0].file holds the control character", 1000),
    ("invalid UTF-8 in a chunk's tag", craft(chunk("tag", MARK), broken=True),
     "chunks[0].tag is not valid UTF-8", 1000),
    ("invalid UTF-8 in a rich record's file", craft(rich(file=MARK), broken=True),
     "rich[0].file is not valid UTF-8", 1000),
    ("invalid UTF-8 in a plugin name", craft(rich(plugin_name=MARK), broken=True),
     "rich[0].plugin_name is not valid UTF-8", 1000),
    ("invalid UTF-8 in a marker's source", craft(marker(source=MARK), broken=True),
     "session_starts[0].source is not valid UTF-8", 1000),
    ("too many series", craft(many_series), "more than 2000 distinct series", 100),
    ("too many rich records", craft(many_rich), "5001 rich records, over the 5000 bound",
     100),
    ("an oversized tag", craft(chunk("tag", "t" * 600)),
     "chunks[0].tag is 600 bytes, over the 512 byte bound", 1000),
    ("an oversized file", craft(rich(file="f" * 5000)),
     "rich[0] (train/img).file is 5000 bytes, over the 4096 byte bound", 1000),
    ("a marker's offset beyond bigint", craft(marker(offset=2**64 - 1)),
     "session_starts[0].offset 18446744073709551615 is over", 1000),
]


@pytest.fixture
async def stub(ingest: Process, tls_dir: Path) -> AsyncIterator[pb_grpc.TelemetryIngestAsyncStub]:
    credentials = grpc.ssl_channel_credentials((tls_dir / "ca.pem").read_bytes())
    async with grpc.aio.secure_channel(f"localhost:{ingest.port}", credentials,
                                       options=[("grpc.max_send_message_length", 64 << 20)],
                                       ) as channel:
        yield pb_grpc.TelemetryIngestStub(channel)


async def refusals(stub: pb_grpc.TelemetryIngestAsyncStub, token: str,
                   payloads: list[bytes]) -> Counter[tuple[grpc.StatusCode, str]]:
    """Sends each payload (four at a time) and counts (code, details) of the answers."""
    slots, answers = asyncio.Semaphore(4), Counter[tuple[grpc.StatusCode, str]]()

    async def one(payload: bytes) -> None:
        async with slots:
            try:
                reply = await stub.PushBatch(pb.PushBatchRequest(batch=payload),
                                             metadata=auth(token), timeout=60)
                answers[(grpc.StatusCode.OK, pb.PushBatchReply.Outcome.Name(reply.outcome))] += 1
            except grpc.aio.AioRpcError as exc:  # "batch <its identity>: why"
                answers[(exc.code(), (exc.details() or "").split(": ", 1)[-1])] += 1
    await asyncio.gather(*(one(p) for p in payloads))
    return answers


async def arrives(db: asyncpg.Connection, run_id: str, points: int) -> float:
    """Seconds until the run's points are in PostgreSQL (the bound is generous: a loaded
    machine; the figure is printed)."""
    started = time.monotonic()
    assert await wait_for_points(db, run_id, points, timeout=60) == points
    return time.monotonic() - started


async def test_one_token_sending_every_refusal_class_stops_nobody(
        initialised: Endpoints, ingest: Process, projector: Process, run_id: str,
        stub: pb_grpc.TelemetryIngestAsyncStub, db: asyncpg.Connection) -> None:
    signer = TokenSigner(initialised.jwt_secret)
    hostile = MemberKey(run_id, 1, "rank-0")
    token = signer.issue_workload(hostile, now=time.time(), ttl_seconds=3600)
    sequence = 0
    for name, make, words, count in CASES:
        payloads = [make(hostile, sequence + i) for i in range(count)]
        sequence += count
        answers = await refusals(stub, token, payloads)
        ((code, details), seen), *others = answers.most_common()
        assert not others, f"{name}: answers differ: {answers.most_common(3)}"
        assert (code, seen) == (grpc.StatusCode.INVALID_ARGUMENT, count), f"{name}: {answers}"
        assert words in details, f"{name}: {details!r} does not name {words!r}"
    innocent = MemberKey(f"{run_id}-innocent", 1, "rank-0")
    reply = await push(stub, member_batch(innocent, 1, 100),
                       signer.issue_workload(innocent, now=time.time(), ttl_seconds=3600))
    assert reply.outcome == pb.PushBatchReply.OUTCOME_DURABLE
    seconds = await arrives(db, innocent.run_id, 100)
    print(f"another run's batch in PostgreSQL {seconds:.2f} s after "
          f"{sequence:,} refused batches")
    assert projector.proc is not None
    assert projector.proc.poll() is None, projector.tail()
    assert not await db.fetchval("SELECT count(*) FROM batch_ledger WHERE run_id = $1", run_id)


async def test_poison_already_in_the_topic_is_passed_by_a_fresh_projector_group(
        initialised: Endpoints, projector: Process, run_id: str, tmp_path: Path,
        db: asyncpg.Connection) -> None:
    group = await group_at_end(initialised.kafka_bootstrap, f"hostile-{uuid.uuid4().hex[:8]}")
    hostile = MemberKey(run_id, 1, "rank-0")
    makers = [make for _, make, _, count in CASES for _ in range(min(count, 20))]
    poison = [make(hostile, sequence) for sequence, make in enumerate(makers)]
    await produce_payloads(initialised.kafka_bootstrap,
                           [(BatchKey(hostile, "e", i), p) for i, p in enumerate(poison)])
    innocent = MemberKey(f"{run_id}-innocent", 1, "rank-0")
    await produce(initialised.kafka_bootstrap, [member_batch(innocent, s, 100)
                                                for s in range(1, 6)])
    fresh = start_projector(initialised, tmp_path / "fresh.log", env=group)
    try:
        seconds = await arrives(db, innocent.run_id, 500)
        print(f"a fresh group passed {len(poison)} poison records; the innocent run's "
              f"points arrived in {seconds:.2f} s")
        # Nothing more may come, and nobody exits: the fresh group is past every record.
        await projected_to_end(initialised.kafka_bootstrap, group["TUNEPLANE_PROJECTOR_GROUP"])
        assert fresh.proc is not None
        assert fresh.proc.poll() is None, fresh.tail()
        log = fresh.log.read_text(errors="replace")
        assert log.count("poison batch at") == len(poison)
        assert await wait_for_points(db, innocent.run_id, 501, timeout=0.5) == 500
        assert not await db.fetchval("SELECT count(*) FROM batch_ledger WHERE run_id = $1",
                                     run_id)
    finally:
        fresh.stop()
    assert projector.proc is not None
    assert projector.proc.poll() is None, projector.tail()


def named(member: MemberKey, sequence: int, tags: list[str]) -> pb.Batch:
    """A batch of ``member`` with one chunk per tag in ``tags``."""
    batch = member_batch(member, sequence, 2 * len(tags), tags=len(tags))
    for chunk, tag in zip(batch.chunks, tags, strict=True):
        chunk.tag = tag
    return batch


async def test_an_attempt_past_its_series_bound_is_refused_at_ingest(
        initialised: Endpoints, projector: Process, tls_dir: Path, tmp_path: Path,
        run_id: str, db: asyncpg.Connection) -> None:
    bounded = start_ingest(initialised, tls_dir, free_port(), tmp_path / "ingest.log",
                           env={"TUNEPLANE_TELEMETRY_MAX_SERIES": "30"})
    signer = TokenSigner(initialised.jwt_secret)
    first, second = MemberKey(run_id, 1, "rank-0"), MemberKey(run_id, 1, "rank-1")
    tokens = {m: signer.issue_workload(m, now=time.time(), ttl_seconds=3600)
              for m in (first, second)}
    credentials = grpc.ssl_channel_credentials((tls_dir / "ca.pem").read_bytes())
    try:
        async with grpc.aio.secure_channel(f"localhost:{bounded.port}", credentials) as ch:
            stub = pb_grpc.TelemetryIngestStub(ch)
            for sequence in range(3):  # 30 series: up to the bound
                tags = [f"m{sequence}-{i}" for i in range(10)]
                reply = await push(stub, named(first, sequence + 1, tags), tokens[first])
                assert reply.outcome == pb.PushBatchReply.OUTCOME_DURABLE
            assert await wait_for_points(db, run_id, 60, timeout=60) == 60
            refused = []
            for member, tags in [(first, ["m0-0", "m0-1", "new"]), (second, ["m0-0"])]:
                with pytest.raises(grpc.aio.AioRpcError) as caught:
                    await push(stub, named(member, 10, tags), tokens[member])
                refused.append((caught.value.code(), caught.value.details() or ""))
            again = await push(stub, named(first, 11, ["m2-9", "m0-0"]), tokens[first])
    finally:
        bounded.stop()
    assert refused[0][0] == refused[1][0] == grpc.StatusCode.INVALID_ARGUMENT
    assert ("chunks[2] (train/new) would be a new series of run "
            f"{run_id!r} attempt 1, which has 30 series: over the bound of 30") in refused[0][1]
    assert "chunks[0] (train/m0-0) would be a new series" in refused[1][1]
    assert again.outcome == pb.PushBatchReply.OUTCOME_DURABLE  # existing series still log
    assert await wait_for_points(db, run_id, 64, timeout=60) == 64
    assert await db.fetchval("SELECT count(*) FROM series WHERE run_id = $1", run_id) == 30
