"""What ``tuneplane-admin durability`` prints: each part's facts and claims as text for
people, or as one JSON document for a deploy to check."""

from __future__ import annotations

import json
from typing import Any

from tuneplane.admin.durability.facts import (
    PARTS,
    KafkaFacts,
    PostgresFacts,
    Profile,
    S3Facts,
    Unreachable,
)
from tuneplane.admin.durability.outcomes import Assessment, Claim
from tuneplane.common.kafka.cluster import OFFSETS_TOPIC, TopicState

TITLES = {"kafka": "Kafka", "postgresql": "PostgreSQL", "s3": "S3"}


def _topic(t: TopicState) -> dict[str, Any]:
    if not t.exists:
        return {"name": t.name, "exists": False}
    return {"name": t.name, "exists": True, "partitions": len(t.partitions),
            "replication": t.replication,
            "min_insync_replicas": t.config.get("min.insync.replicas"),
            "unclean_leader_election": t.config.get("unclean.leader.election.enable"),
            "fewest_in_sync": min(len(p.isr) for p in t.partitions) if t.partitions else 0}


def facts(found: KafkaFacts | PostgresFacts | S3Facts | Unreachable) -> dict[str, Any]:
    """A part's facts as plain JSON values."""
    if isinstance(found, Unreachable):
        return {"where": found.where, "unreachable": found.error}
    if isinstance(found, KafkaFacts):
        c = found.cluster
        return {"bootstrap": found.bootstrap, "cluster_id": c.cluster_id,
                "controller": c.controller,
                "brokers": [{"id": b.id, "host": b.host, "port": b.port, "rack": b.rack}
                            for b in c.brokers],
                "topics": [_topic(t) for t in c.topics]}
    if isinstance(found, PostgresFacts):
        return {"where": found.where, "server_address": found.server_address,
                "version": found.version, "fsync": found.fsync,
                "synchronous_commit": found.synchronous_commit,
                "synchronous_standby_names": found.synchronous_standby_names,
                "standbys": [{"name": s.name, "address": s.address, "state": s.state,
                              "sync_state": s.sync_state} for s in found.standbys]}
    return {"endpoint": found.endpoint, "bucket": found.bucket,
            "bucket_exists": found.bucket_exists, "server": found.server}


def _claim(c: Claim) -> dict[str, Any]:
    return {"part": c.part, "loss": c.loss, "outcome": c.outcome.value,
            "survives": c.survives, "assumed": c.assumed, "reason": c.reason}


def as_json(profile: Profile, assessment: Assessment) -> str:
    return json.dumps({
        **{part: facts(getattr(profile, part)) for part in PARTS},
        "claims": [_claim(c) for c in assessment.claims],
        "multi_machine": assessment.multi_machine,
    }, indent=1)


def _topic_line(t: TopicState) -> str:
    if not t.exists:
        return f"  {t.name}: " + ("not created yet (Kafka creates it at a consumer group's "
                                  "first commit)" if t.name == OFFSETS_TOPIC else
                                  "does not exist")
    shown = _topic(t)
    return (f"  {t.name}: {shown['partitions']} partitions, replication {t.replication}, "
            f"min.insync.replicas {shown['min_insync_replicas']}, "
            f"unclean.leader.election.enable {shown['unclean_leader_election']}, "
            f"fewest in sync {shown['fewest_in_sync']}")


def _fact_lines(found: KafkaFacts | PostgresFacts | S3Facts | Unreachable) -> list[str]:
    if isinstance(found, Unreachable):
        return [f"{found.where}: unreachable"]
    if isinstance(found, KafkaFacts):
        c = found.cluster
        brokers = ", ".join(f"{b.id} at {b.host}:{b.port}" + (f" rack {b.rack}" if b.rack else "")
                            for b in c.brokers)
        return [f"{found.bootstrap} (cluster {c.cluster_id})",
                f"  brokers: {len(c.brokers)} ({brokers})",
                *(_topic_line(t) for t in c.topics)]
    if isinstance(found, PostgresFacts):
        standbys = ", ".join(f"{s.name} at {s.address or 'a local socket'} ({s.state}, "
                             f"{s.sync_state})" for s in found.standbys)
        return [f"{found.where} (PostgreSQL {found.version}, server address "
                f"{found.server_address or 'a local socket'})",
                f"  fsync {found.fsync}, synchronous_commit {found.synchronous_commit}, "
                f"synchronous_standby_names {found.synchronous_standby_names!r}",
                f"  standbys (pg_stat_replication): {standbys or 'none'}"]
    return [f"{found.endpoint}, bucket {found.bucket} "
            f"({'exists' if found.bucket_exists else 'missing'}; "
            f"server {found.server or 'not named'})"]


def as_text(profile: Profile, assessment: Assessment) -> str:
    lines = []
    for part in PARTS:
        fact_lines = _fact_lines(getattr(profile, part))
        lines.append(f"{TITLES[part]}: {fact_lines[0]}")
        lines.extend(fact_lines[1:])
        lines.extend(f"  - {c.sentence()}: {c.reason}" for c in assessment.claims
                     if c.part == part)
    failing = assessment.failing()
    lines.append("multi-machine: yes, every part survives the loss of one machine"
                 if not failing else
                 f"multi-machine: no, {', '.join(c.part for c in failing)} cannot be said to "
                 f"survive the loss of one machine")
    return "\n".join(lines) + "\n"
