"""The consumer pipeline on the in-memory broker: commit last, poison aside, a flood stops."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from tuneplane.common.kafka.memory import MemoryBroker, MemoryDeadLetters
from tuneplane.common.kafka.message import InvalidMessage, Message
from tuneplane.common.kafka.pipeline import Pipeline
from tuneplane.common.kafka.poison import DeadLetterLimit, PoisonPolicy


def decode(message: Message) -> int:
    if not message.value.isdigit():
        raise InvalidMessage(f"not a number: {message.value!r}")
    return int(message.value)


class Store:
    """A write step keeping values once (by value), failing on demand."""

    def __init__(self, broker: MemoryBroker) -> None:
        self.broker = broker
        self.kept: list[int] = []
        self.fail = False
        self.committed_when_written: list[dict[int, int]] = []

    async def write(self, values: Sequence[int]) -> list[bool]:
        # What the group had committed when this write ran: never this group's records.
        self.committed_when_written.append(dict(self.broker.committed.get("g", {})))
        if self.fail:
            raise ConnectionError("database restarting")
        fresh = []
        for value in values:
            fresh.append(value not in self.kept)
            if fresh[-1]:
                self.kept.append(value)
        return fresh


def pipeline(broker: MemoryBroker, store: Store, dead: MemoryDeadLetters,
             limit: int | None = 10) -> Pipeline[int]:
    return Pipeline(broker.consumer("g"), decode, store.write,
                    PoisonPolicy(dead, limit, clock=lambda: 0.0), max_records=10)


async def test_the_commit_comes_after_the_write() -> None:
    broker, dead = MemoryBroker(), MemoryDeadLetters()
    store = Store(broker)
    for value in (b"1", b"2", b"3"):
        broker.produce(value)
    group = await pipeline(broker, store, dead).run_once()
    assert [v for v, _ in group.written] == [1, 2, 3]
    assert store.committed_when_written == [{}]  # nothing committed while writing
    assert broker.committed["g"] == {0: 3}


async def test_a_failed_write_commits_nothing_and_the_group_comes_again() -> None:
    broker, dead = MemoryBroker(), MemoryDeadLetters()
    store = Store(broker)
    broker.produce(b"1")
    store.fail = True
    with pytest.raises(ConnectionError):
        await pipeline(broker, store, dead).run_once()
    assert "g" not in broker.committed
    store.fail = False
    group = await pipeline(broker, store, dead).run_once()  # a restarted consumer
    assert group.applied == 1
    assert broker.committed["g"] == {0: 1}


async def test_a_record_seen_again_after_a_crash_has_no_second_effect() -> None:
    broker, dead = MemoryBroker(), MemoryDeadLetters()
    store = Store(broker)
    broker.produce(b"7")
    broker.produce(b"7")  # a resend of the same batch
    group = await pipeline(broker, store, dead).run_once()
    assert (group.applied, group.duplicates) == (1, 1)
    assert store.kept == [7]


async def test_poison_goes_aside_with_its_reason_and_the_partition_flows() -> None:
    broker, dead = MemoryBroker(partitions=2), MemoryDeadLetters()
    store = Store(broker)
    broker.produce(b"1", partition=0)
    bad = broker.produce(b"\x00junk", partition=0)
    broker.produce(b"2", partition=0)
    broker.produce(b"3", partition=1)
    group = await pipeline(broker, store, dead).run_once()
    assert group.poison == 1
    assert dead.kept == [(bad, "not a number: b'\\x00junk'")]
    assert sorted(store.kept) == [1, 2, 3]
    assert broker.committed["g"] == {0: 3, 1: 1}  # the poison record is committed too


async def test_a_flood_of_poison_from_many_runs_stops_without_committing() -> None:
    broker, dead = MemoryBroker(), MemoryDeadLetters()
    store = Store(broker)
    for run in ("a", "b", "c", "d"):
        broker.produce(b"x", key=f"{run}/1/m/e-1".encode())
    with pytest.raises(DeadLetterLimit, match="more than 3 dead letters in 60 s from 4 runs"):
        await Pipeline(broker.consumer("g"), decode, store.write,
                       PoisonPolicy(dead, 3, runs=3, clock=lambda: 0.0)).run_once()
    assert len(dead.kept) == 3
    assert "g" not in broker.committed
    assert store.kept == []


async def test_one_runs_flood_of_poison_never_stops_the_others() -> None:
    broker, dead = MemoryBroker(), MemoryDeadLetters()
    store = Store(broker)
    for _ in range(50):
        broker.produce(b"x", key=b"hostile/1/m/e-1")
    broker.produce(b"5", key=b"innocent/1/m/e-1")
    group = await Pipeline(broker.consumer("g"), decode, store.write,
                           PoisonPolicy(dead, 3, runs=2, clock=lambda: 0.0),
                           max_records=100).run_once()
    assert (group.poison, store.kept) == (50, [5])
    assert broker.committed["g"] == {0: 51}


async def test_a_write_refusing_one_value_is_retried_alone_and_only_it_is_poison() -> None:
    broker, dead = MemoryBroker(), MemoryDeadLetters()
    store = Store(broker)
    for value in (b"1", b"13", b"2"):
        broker.produce(value)

    async def refusing_13(values: Sequence[int]) -> list[bool]:
        if 13 in values:
            raise InvalidMessage("the store refuses 13")
        return await store.write(values)

    group = await Pipeline(broker.consumer("g"), decode, refusing_13,
                           PoisonPolicy(dead, 10, clock=lambda: 0.0)).run_once()
    assert store.kept == [1, 2]
    assert [(m.value, reason) for m, reason in dead.kept] == [(b"13", "the store refuses 13")]
    assert (group.applied, group.poison) == (2, 1)
    assert broker.committed["g"] == {0: 3}


async def test_an_empty_poll_commits_nothing() -> None:
    broker, dead = MemoryBroker(), MemoryDeadLetters()
    group = await pipeline(broker, Store(broker), dead).run_once()
    assert (list(group.messages), group.written, group.poison) == ([], [], 0)
    assert "g" not in broker.committed
