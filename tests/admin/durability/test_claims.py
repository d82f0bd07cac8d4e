"""What PostgreSQL's settings and standbys and the S3 endpoint support claiming of the loss
of one machine, and the whole assessment: what --require multi-machine takes, what --assume
changes (pure: no server)."""

from __future__ import annotations

import pytest

from tuneplane.admin.durability.claims import assess, postgresql, required_standbys, s3
from tuneplane.admin.durability.facts import (
    KafkaFacts,
    PostgresFacts,
    Profile,
    S3Facts,
    Standby,
    Unreachable,
)
from tuneplane.admin.durability.outcomes import MACHINE, Outcome
from tuneplane.common.kafka.cluster import Broker, ClusterState, Partition, TopicState

BATCHES = "tuneplane.telemetry.batches.v1"


def pg(fsync: str = "on", commit: str = "on", names: str = "",
       *standbys: Standby) -> PostgresFacts:
    return PostgresFacts("db:5432/tuneplane", "10.0.0.1", "15.8", fsync, commit, names,
                         standbys)


def standby(name: str, address: str | None = "10.0.0.2", sync: str | None = "sync",
            state: str = "streaming") -> Standby:
    return Standby(name, address, state, sync)


def test_a_lone_server_does_not_survive_and_says_how_a_managed_one_is_vouched_for() -> None:
    claim = postgresql(pg("on", "on", "", standby("async1", sync="async")))
    assert claim.outcome is Outcome.LOSES
    assert claim.reason == (
        "synchronous_standby_names is empty: a commit is acknowledged once this server alone "
        "has it (1 asynchronous standby(s) may lag) (a managed service that replicates its "
        "storage below PostgreSQL shows none of it here: --assume postgresql)")


@pytest.mark.parametrize(("facts", "said"), [
    (pg("off", "on", "s1", standby("s1")), "fsync is off"),
    (pg("on", "local", "s1", standby("s1")), "synchronous_commit is local"),
    (pg("on", "off", "s1", standby("s1")), "synchronous_commit is off"),
])
def test_fsync_off_or_a_local_commit_loses(facts: PostgresFacts, said: str) -> None:
    claim = postgresql(facts)
    assert claim.outcome is Outcome.LOSES
    assert claim.reason.startswith(said)


def test_a_synchronous_standby_not_streaming_makes_commits_wait() -> None:
    claim = postgresql(pg("on", "on", "s1"))
    assert claim.outcome is Outcome.STOPS
    assert claim.reason == ("synchronous_standby_names is 's1', and 0 of the 1 synchronous "
                            "standby(s) it needs stream from another machine: commits wait "
                            "until they do")


@pytest.mark.parametrize("address", [None, "127.0.0.1", "10.0.0.1"])
def test_a_standby_on_the_servers_own_machine_does_not_count(address: str | None) -> None:
    assert postgresql(pg("on", "on", "s1", standby("s1", address))).outcome is Outcome.STOPS


def test_one_synchronous_standby_keeps_commits_but_none_can_take_its_place() -> None:
    claim = postgresql(pg("on", "remote_write", "s1", standby("s1")))
    assert claim.outcome is Outcome.STOPS
    assert claim.reason.startswith("every commit reaches s1 at 10.0.0.2 before it is "
                                   "acknowledged, but no other standby could take its place")


def test_a_synchronous_standby_and_a_candidate_elsewhere_survive() -> None:
    claim = postgresql(pg("on", "on", "FIRST 1 (s1, s2)", standby("s1"),
                          standby("s2", "10.0.0.3", sync="potential")))
    assert claim.outcome is Outcome.SURVIVES
    assert claim.reason.startswith("synchronous_commit is on: every commit reaches s1 at "
                                   "10.0.0.2 before it is acknowledged, and 1 more standby(s)")
    assert "PostgreSQL does not fail over by itself" in claim.reason


def test_hidden_replication_columns_cannot_tell() -> None:
    claim = postgresql(pg("on", "on", "s1", Standby("s1", None, None, None)))
    assert claim.outcome is Outcome.UNKNOWN
    assert "pg_read_all_stats" in claim.reason


@pytest.mark.parametrize(("names", "count"), [
    ("s1", 1), ("s1, s2", 1), ("*", 1), ("FIRST 2 (s1, s2, s3)", 2), ("ANY 2 (s1,s2,s3)", 2),
    ("3 (s1, s2, s3)", 3), ("any 1 (s1)", 1)])
def test_the_standbys_a_commit_waits_for(names: str, count: int) -> None:
    assert required_standbys(names) == count


def test_an_s3_endpoint_on_loopback_goes_with_the_machine() -> None:
    claim = s3(S3Facts("http://127.0.0.1:8333", "127.0.0.1", "b", True, "SeaweedFS 4.48"))
    assert claim.outcome is Outcome.LOSES
    assert claim.reason.startswith("the endpoint http://127.0.0.1:8333 (SeaweedFS 4.48) is on "
                                   "this machine (loopback)")


def test_what_another_s3_endpoint_keeps_cannot_be_told() -> None:
    claim = s3(S3Facts("https://s3.eu-west-1.amazonaws.com", "s3.eu-west-1.amazonaws.com", "b",
                       True, "AmazonS3"))
    assert claim.outcome is Outcome.UNKNOWN
    assert claim.reason.endswith("then --assume s3")
    missing = s3(S3Facts("http://s3:8333", "s3", "b", False, None))
    assert missing.reason == ("bucket b does not exist at http://s3:8333 (`tuneplane-admin "
                              "init` creates it)")


def replicated_kafka() -> KafkaFacts:
    hosts = ("k0.example", "k1.example", "k2.example")
    topic = TopicState(BATCHES, True, tuple(Partition(p, 1, (1, 2, 3), (1, 2, 3))
                                            for p in range(3)),
                       {"min.insync.replicas": "2", "unclean.leader.election.enable": "false"})
    return KafkaFacts("k0.example:9092", ClusterState(
        "c", 1, tuple(Broker(i, h, 9092) for i, h in enumerate(hosts, 1)), (topic,)))


def profile(assumed: frozenset[str] = frozenset()) -> Profile:
    return Profile(replicated_kafka(),
                   pg("on", "on", "ANY 1 (s1, s2)", standby("s1", sync="quorum"),
                      standby("s2", "10.0.0.3", sync="quorum")),
                   S3Facts("https://s3.example", "s3.example", "b", True, None),
                   (BATCHES,), assumed)


def test_multi_machine_needs_every_machine_claim_to_survive() -> None:
    assessment = assess(profile())
    assert [(c.part, c.loss, c.outcome) for c in assessment.claims] == [
        ("kafka", "broker", Outcome.SURVIVES), ("kafka", MACHINE, Outcome.SURVIVES),
        ("postgresql", MACHINE, Outcome.SURVIVES), ("s3", MACHINE, Outcome.UNKNOWN)]
    assert [c.part for c in assessment.failing()] == ["s3"]
    assert not assessment.multi_machine


def test_an_assumed_part_counts_as_surviving_and_says_so() -> None:
    assessment = assess(profile(frozenset({"s3", "kafka"})))
    assert assessment.multi_machine
    s3_claim = assessment.claims[-1]
    assert s3_claim.assumed
    assert s3_claim.outcome is Outcome.UNKNOWN
    assert s3_claim.sentence() == ("cannot tell whether it survives the loss of one machine "
                                   "(assumed by the operator)")
    assert s3_claim.reason.endswith("; taken on the operator's word (--assume s3)")
    assert not any(c.assumed for c in assessment.claims[:-1])  # they survive on their own


def test_an_unreachable_store_is_unknown_and_listed() -> None:
    down = Unreachable("postgresql", "db:5432/tuneplane", "db:5432/tuneplane: refused")
    found = Profile(replicated_kafka(), down, S3Facts("http://s3", "s3", "b", True, None),
                    (BATCHES,))
    assert found.unreachable() == [down]
    claim = assess(found).claims[2]
    assert (claim.part, claim.outcome, claim.reason) == (
        "postgresql", Outcome.UNKNOWN, "could not be read: db:5432/tuneplane: refused")
