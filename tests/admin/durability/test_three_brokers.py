"""Three brokers of ``scripts/services up --brokers 3``, started into a folder of this module's
own (never the shared ``.services``): ``tuneplane-admin durability`` says their topics
survive the loss of one broker (not of the machine: all three are on loopback), and it is
so: with the leader SIGKILLed what was acknowledged is all there and ingest's sink still
gets acknowledgements; with a second broker gone (below min.insync.replicas 2) it gets none.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import time
from collections.abc import AsyncIterator

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition

from tests.support.environment import BIN
from tests.support.three_brokers import PARTITIONS, Cluster, leader_of
from tuneplane.common.kafka import topics
from tuneplane.ingest.sink import KafkaBatchSink, SinkUnavailable, partition_for
from tuneplane.telemetry.v1.identity import BatchKey, MemberKey

MEMBER = MemberKey("three-brokers", 1, "rank-0")


def durability(found: Cluster, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / "tuneplane-admin"), "durability", *args],
                          capture_output=True, text=True, check=False, timeout=120,
                          env={**os.environ, "TUNEPLANE_KAFKA_BOOTSTRAP": found.bootstrap})


def kafka_claims(found: Cluster) -> dict[str, dict[str, str]]:
    done = durability(found, "--json")
    assert done.returncode == 0, done.stderr
    return {c["loss"]: c for c in json.loads(done.stdout)["claims"] if c["part"] == "kafka"}


def test_durability_says_three_brokers_survive_one_but_not_the_machine(
        three_brokers: Cluster) -> None:
    claims = kafka_claims(three_brokers)
    assert claims["broker"]["outcome"] == "survives", claims["broker"]["reason"]
    assert claims["machine"]["outcome"] == "loses"
    assert "all 3 replicas are on this machine (loopback)" in claims["machine"]["reason"]
    text = durability(three_brokers, "--require", "multi-machine")
    assert text.returncode == 3
    assert "brokers: 3 (1 at 127.0.0.1:" in text.stdout
    assert "replication 3, min.insync.replicas 2, unclean.leader.election.enable false" in \
        text.stdout
    assert "  - survives the loss of one broker: " in text.stdout


def key(batch: int) -> BatchKey:
    return BatchKey(MEMBER, "epoch-1", batch)


@contextlib.asynccontextmanager
async def sink(found: Cluster, timeout: float) -> AsyncIterator[KafkaBatchSink]:
    """Ingest's own sink (acks=all, idempotent), started: ``put`` returns once Kafka has
    confirmed a batch, or raises SinkUnavailable after ``timeout``."""
    started = KafkaBatchSink(found.bootstrap, timeout_seconds=timeout)
    await started.start()
    try:
        yield started
    finally:
        await started.stop()


async def put(into: KafkaBatchSink, batches: range) -> None:
    for batch in batches:
        await into.put(key(batch), f"batch {batch}".encode())


async def stored(found: Cluster, partition: int, expected: int, *, start: int = 0,
                 timeout: float = 60) -> tuple[list[bytes], int]:
    """The first ``expected`` records of the batches topic's ``partition`` from offset
    ``start`` (fewer if they are not there within ``timeout``), and the partition's end
    offset then (``stored(..., 0)`` alone: where the test's records begin)."""
    consumer = AIOKafkaConsumer(bootstrap_servers=found.bootstrap, enable_auto_commit=False,
                                auto_offset_reset="earliest")
    await consumer.start()
    try:
        tp = TopicPartition(topics.BATCHES, partition)
        consumer.assign([tp])
        consumer.seek(tp, start)
        records: list[bytes] = []
        deadline = time.monotonic() + timeout
        while len(records) < expected and time.monotonic() < deadline:
            for got in (await consumer.getmany(tp, timeout_ms=1000)).get(tp, []):
                assert got.value is not None
                records.append(got.value)
        return records, (await consumer.end_offsets([tp]))[tp]
    finally:
        await consumer.stop()


async def test_a_lost_leader_loses_nothing_and_two_lost_brokers_refuse_writes(
        three_brokers: Cluster) -> None:
    partition = partition_for(key(0), PARTITIONS)
    _, start = await stored(three_brokers, partition, 0)  # the pipeline's test wrote before
    # The controller fences a killed broker after its session timeout (9 s) and elects a new
    # leader from the in-sync replicas; the sink waits for that, as ingest would.
    async with sink(three_brokers, timeout=90) as ingest:
        await put(ingest, range(1, 21))
        leader = await leader_of(three_brokers, partition)
        three_brokers.kill(leader)
        await put(ingest, range(21, 41))
    records, end = await stored(three_brokers, partition, expected=40, start=start)
    assert records == [f"batch {b}".encode() for b in range(1, 41)]
    assert end == start + 40  # nothing written twice
    deadline = time.monotonic() + 60
    while (claim := kafka_claims(three_brokers)["broker"])["outcome"] != "stops":
        assert time.monotonic() < deadline, f"still {claim}"
    assert "2 of 3 replicas in sync; with one broker lost 1 would be" in claim["reason"]

    survivor = await leader_of(three_brokers, partition)
    assert survivor != leader
    async with sink(three_brokers, timeout=10) as ingest:  # started while it still could
        three_brokers.kill(survivor)
        with pytest.raises(SinkUnavailable, match="Kafka did not confirm batch"):
            await put(ingest, range(41, 42))
        # The producer keeps the refused batch until a broker takes it: it stops (flushes)
        # only once the cluster is back, as a collector resends only then.
        await asyncio.to_thread(three_brokers.up)
