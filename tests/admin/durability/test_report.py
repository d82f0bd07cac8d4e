"""How the facts and claims are printed: text a person reads part by part, and one JSON
document a deploy checks (pure)."""

from __future__ import annotations

import json

from tuneplane.admin.durability.claims import assess
from tuneplane.admin.durability.facts import (
    KafkaFacts,
    PostgresFacts,
    Profile,
    Unreachable,
)
from tuneplane.admin.durability.report import as_json, as_text
from tuneplane.common.kafka.cluster import Broker, ClusterState, Partition, TopicState

BATCHES = "tuneplane.telemetry.batches.v1"


def single_machine() -> Profile:
    topic = TopicState(BATCHES, True, (Partition(0, 1, (1,), (1,)),),
                       {"min.insync.replicas": "1", "unclean.leader.election.enable": "false"})
    return Profile(
        KafkaFacts("127.0.0.1:9092", ClusterState("c1", 1, (Broker(1, "127.0.0.1", 9092),),
                                                  (topic,))),
        PostgresFacts("127.0.0.1:5432/tuneplane", "127.0.0.1", "15.8", "on", "on", "", ()),
        Unreachable("s3", "http://127.0.0.1:8333", "http://127.0.0.1:8333: refused"),
        (BATCHES,))


def test_the_text_gives_each_parts_facts_then_its_claims() -> None:
    text = as_text(single_machine(), assess(single_machine())).splitlines()
    assert text[:4] == [
        "Kafka: 127.0.0.1:9092 (cluster c1)",
        "  brokers: 1 (1 at 127.0.0.1:9092)",
        f"  {BATCHES}: 1 partitions, replication 1, min.insync.replicas 1, "
        "unclean.leader.election.enable false, fewest in sync 1",
        f"  - does not survive the loss of one broker: {BATCHES}: replication 1: one copy, on "
        "broker 1 (its partition)",
    ]
    assert text[5:8] == [
        "PostgreSQL: 127.0.0.1:5432/tuneplane (PostgreSQL 15.8, server address 127.0.0.1)",
        "  fsync on, synchronous_commit on, synchronous_standby_names ''",
        "  standbys (pg_stat_replication): none",
    ]
    assert text[9:] == [
        "S3: http://127.0.0.1:8333: unreachable",
        "  - cannot tell whether it survives the loss of one machine: could not be read: "
        "http://127.0.0.1:8333: refused",
        "multi-machine: no, kafka, postgresql, s3 cannot be said to survive the loss of one "
        "machine",
    ]


def test_the_json_holds_the_facts_the_claims_and_the_verdict() -> None:
    shown = json.loads(as_json(single_machine(), assess(single_machine())))
    assert sorted(shown) == ["claims", "kafka", "multi_machine", "postgresql", "s3"]
    assert shown["kafka"]["brokers"] == [{"id": 1, "host": "127.0.0.1", "port": 9092,
                                          "rack": None}]
    assert shown["kafka"]["topics"] == [{
        "name": BATCHES, "exists": True, "partitions": 1, "replication": 1,
        "min_insync_replicas": "1", "unclean_leader_election": "false", "fewest_in_sync": 1}]
    assert shown["postgresql"]["synchronous_standby_names"] == ""
    assert shown["s3"] == {"where": "http://127.0.0.1:8333",
                           "unreachable": "http://127.0.0.1:8333: refused"}
    assert [(c["part"], c["loss"], c["outcome"], c["survives"]) for c in shown["claims"]] == [
        ("kafka", "broker", "loses", False), ("kafka", "machine", "loses", False),
        ("postgresql", "machine", "loses", False), ("s3", "machine", "unknown", False)]
    assert shown["multi_machine"] is False
