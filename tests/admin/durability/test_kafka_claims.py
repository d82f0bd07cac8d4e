"""What a Kafka cluster's own description supports claiming of the loss of one broker and
of one machine: replicas, min.insync.replicas, unclean election, where the brokers are and
what is in sync now (pure: no broker)."""

from __future__ import annotations

import pytest

from tuneplane.admin.durability.claims import kafka
from tuneplane.admin.durability.facts import KafkaFacts, Unreachable
from tuneplane.admin.durability.outcomes import BROKER, MACHINE, Claim, Outcome
from tuneplane.common.kafka.cluster import (
    OFFSETS_TOPIC,
    Broker,
    ClusterState,
    Partition,
    TopicState,
)

BATCHES = "tuneplane.telemetry.batches.v1"
TOPICS = (BATCHES, OFFSETS_TOPIC)


def brokers(*hosts: str, racks: tuple[str | None, ...] = ()) -> tuple[Broker, ...]:
    return tuple(Broker(i, host, 9092 + i, racks[i - 1] if racks else None)
                 for i, host in enumerate(hosts, start=1))


def topic(replicas: tuple[int, ...], isr: tuple[int, ...] | None = None, min_isr: int = 2,
          unclean: str = "false", partitions: int = 4, name: str = BATCHES) -> TopicState:
    return TopicState(name, True, tuple(
        Partition(p, replicas[0], replicas, replicas if isr is None else isr)
        for p in range(partitions)),
        {"min.insync.replicas": str(min_isr), "unclean.leader.election.enable": unclean})


def judged(found: tuple[Broker, ...], *topics: TopicState) -> dict[str, Claim]:
    facts = KafkaFacts("b:9092", ClusterState("c", 1, found, topics))
    return {c.loss: c for c in kafka(facts, TOPICS)}


def test_one_broker_with_replication_1_survives_nothing() -> None:
    claims = judged(brokers("127.0.0.1"), topic((1,), min_isr=1))
    assert [c.outcome for c in claims.values()] == [Outcome.LOSES, Outcome.LOSES]
    assert claims[BROKER].reason == (f"{BATCHES}: replication 1: one copy, on broker 1 "
                                     "(every partition)")
    assert claims[MACHINE].sentence() == "does not survive the loss of one machine"


def test_three_brokers_on_loopback_survive_a_broker_not_the_machine() -> None:
    claims = judged(brokers("127.0.0.1", "127.0.0.1", "localhost"), topic((1, 2, 3)))
    assert claims[BROKER].outcome is Outcome.SURVIVES
    assert claims[BROKER].reason.startswith(
        "each acknowledged record is on at least 2 brokers, and with one lost every partition "
        "still has 2 in sync (replication 3 or more, min.insync.replicas 2 or more")
    assert claims[MACHINE].outcome is Outcome.LOSES
    assert claims[MACHINE].reason == (f"{BATCHES}: all 3 replicas are on this machine "
                                      "(loopback) (every partition)")


def test_three_brokers_on_three_hosts_survive_a_machine() -> None:
    claims = judged(brokers("k0.example", "k1.example", "k2.example"), topic((1, 2, 3)))
    assert claims[MACHINE].outcome is Outcome.SURVIVES
    assert claims[MACHINE].survives
    assert "machines told apart by the brokers' advertised hosts" in claims[MACHINE].reason


def test_racks_tell_machines_apart_and_two_replicas_on_one_rack_lose() -> None:
    claims = judged(brokers("k0", "k1", "k2", racks=("a", "a", "b")), topic((1, 2, 3)))
    assert claims[BROKER].outcome is Outcome.SURVIVES
    assert claims[MACHINE].outcome is Outcome.LOSES
    assert "min.insync.replicas is 2 and 2 replicas are on rack a" in claims[MACHINE].reason


def test_one_replica_out_of_sync_keeps_data_but_another_loss_stops_writes() -> None:
    # Broker 3 is down: the metadata lists two brokers, its replica is out of sync.
    claims = judged(brokers("k0", "k1"), topic((1, 2, 3), isr=(1, 2)))
    assert claims[BROKER].outcome is Outcome.STOPS
    assert claims[BROKER].reason == (
        f"{BATCHES}: 2 of 3 replicas in sync; with one broker lost 1 would be, below "
        "min.insync.replicas 2: writes are refused (nothing acknowledged is lost) "
        "(every partition)")
    assert claims[BROKER].sentence() == ("keeps what it acknowledged but stops taking writes "
                                         "when one broker is lost")


def test_replication_2_with_min_isr_2_stops_and_min_isr_1_loses() -> None:
    assert judged(brokers("k0", "k1"), topic((1, 2)))[BROKER].outcome is Outcome.STOPS
    lost = judged(brokers("k0", "k1", "k2"), topic((1, 2, 3), min_isr=1))[BROKER]
    assert lost.outcome is Outcome.LOSES
    assert "min.insync.replicas is 1: a record is acknowledged once its leader alone" in \
        lost.reason


@pytest.mark.parametrize("unclean", ["true", "unreadable"])
def test_unclean_election_on_or_unknown_loses(unclean: str) -> None:
    found = topic((1, 2, 3), unclean=unclean)
    if unclean == "unreadable":
        found = TopicState(found.name, True, found.partitions, {"min.insync.replicas": "2"})
    claim = judged(brokers("k0", "k1", "k2"), found)[MACHINE]
    assert claim.outcome is Outcome.LOSES
    assert f"unclean.leader.election.enable is {unclean}" in claim.reason


def test_the_worst_topic_decides_and_alike_topics_are_named_together() -> None:
    claims = judged(brokers("k0", "k1", "k2"), topic((1, 2, 3)),
                    topic((1,), min_isr=1, partitions=2, name=OFFSETS_TOPIC))
    assert claims[MACHINE].reason == (f"{OFFSETS_TOPIC}: replication 1: one copy, on broker 1 "
                                      "(every partition)")


def test_a_missing_topic_is_unknown_but_a_missing_offsets_topic_holds_nothing() -> None:
    missing = TopicState(BATCHES, exists=False)
    claim = judged(brokers("k0"), missing)[MACHINE]
    assert claim.outcome is Outcome.UNKNOWN
    assert claim.reason == f"{BATCHES}: does not exist (`tuneplane-admin init` creates it)"
    fine = judged(brokers("k0", "k1", "k2"), topic((1, 2, 3)),
                  TopicState(OFFSETS_TOPIC, exists=False))
    assert fine[MACHINE].outcome is Outcome.SURVIVES


def test_some_partitions_alike_are_listed() -> None:
    mixed = TopicState(BATCHES, True, (
        Partition(0, 1, (1, 2, 3), (1, 2, 3)), Partition(1, 1, (1, 2, 3), (1, 2)),
        Partition(2, 2, (2, 3, 1), (2, 3, 1))),
        {"min.insync.replicas": "2", "unclean.leader.election.enable": "false"})
    claim = judged(brokers("k0", "k1", "k2"), mixed)[BROKER]
    assert claim.outcome is Outcome.STOPS
    assert claim.reason.endswith("(partition 1 of 3)")


def test_an_unreachable_cluster_is_unknown_on_both_counts() -> None:
    claims = kafka(Unreachable("kafka", "b:9092", "b:9092: no answer"), TOPICS)
    assert [(c.loss, c.outcome, c.reason) for c in claims] == [
        (BROKER, Outcome.UNKNOWN, "could not be read: b:9092: no answer"),
        (MACHINE, Outcome.UNKNOWN, "could not be read: b:9092: no answer")]
