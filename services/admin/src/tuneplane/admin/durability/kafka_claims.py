"""Whether a Kafka topic keeps what it acknowledged, and takes writes, once one machine (or
one broker) is gone: pure, from the cluster's own description.

With ``acks=all`` (ingest's producer) a record is acknowledged once ``min.insync.replicas``
in-sync replicas hold it, and with unclean leader election off only an in-sync replica
becomes leader. So a partition keeps every acknowledged record through the loss of one
machine when fewer than ``min.insync.replicas`` of its replicas share any machine, and goes
on taking writes when, with the machine holding most of its in-sync replicas gone,
``min.insync.replicas`` of them remain.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from tuneplane.admin.durability.outcomes import Outcome, worst
from tuneplane.admin.durability.place import machine
from tuneplane.common.kafka.cluster import Broker, Partition, TopicState

MIN_ISR, UNCLEAN = "min.insync.replicas", "unclean.leader.election.enable"


def machines(brokers: Sequence[Broker]) -> tuple[dict[int, str], str]:
    """Broker id → the machine it runs on, and how machines were told apart: by
    ``broker.rack`` when every broker has one, else by advertised host."""
    if brokers and all(b.rack for b in brokers):
        return {b.id: f"rack {b.rack}" for b in brokers}, " (machines told apart by broker.rack)"
    return {b.id: machine(b.host) for b in brokers}, (
        " (machines told apart by the brokers' advertised hosts: set broker.rack where one "
        "machine has two names or runs several brokers' pods)")


def _on(machines: Mapping[int, str], broker: int) -> str:
    # A replica on a broker the metadata no longer lists (it is down): a machine of its own.
    return machines.get(broker, f"broker {broker} (not answering)")


def partition(p: Partition, min_isr: int, machines: Mapping[int, str],
              loss: str) -> tuple[Outcome, str]:
    """The outcome of one partition, and why (without naming it: partitions alike share a
    reason)."""
    where = Counter(_on(machines, r) for r in p.replicas)
    place, crowded = where.most_common(1)[0]
    if len(p.replicas) == 1:
        return Outcome.LOSES, f"replication 1: one copy, on broker {p.replicas[0]}"
    if min_isr <= 1:
        return Outcome.LOSES, (f"min.insync.replicas is {min_isr}: a record is acknowledged "
                               f"once its leader alone has it")
    if crowded >= min_isr:
        if len(where) == 1:
            return Outcome.LOSES, f"all {len(p.replicas)} replicas are on {place}"
        return Outcome.LOSES, (f"min.insync.replicas is {min_isr} and {crowded} replicas are "
                               f"on {place}: a record only they hold is acknowledged")
    in_sync = Counter(_on(machines, r) for r in p.isr)
    left = len(p.isr) - max(in_sync.values(), default=0)
    if left < min_isr:
        return Outcome.STOPS, (
            f"{len(p.isr)} of {len(p.replicas)} replicas in sync; with one {loss} lost {left} "
            f"would be, below min.insync.replicas {min_isr}: writes are refused (nothing "
            f"acknowledged is lost)")
    return Outcome.SURVIVES, ""


def _which(ids: list[int], of: int) -> str:
    if len(ids) == of:
        return "every partition" if of > 1 else "its partition"
    shown = ", ".join(map(str, ids[:5])) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
    return f"partition{'s' if len(ids) > 1 else ''} {shown} of {of}"


def topic(t: TopicState, machines: Mapping[int, str], loss: str) -> tuple[Outcome, str]:
    """The outcome of ``t`` (its worst partitions') and why, without naming the topic (topics
    alike share a reason)."""
    if not t.exists:
        return Outcome.UNKNOWN, "does not exist (`tuneplane-admin init` creates it)"
    if not t.partitions:
        return Outcome.UNKNOWN, "has no partitions"
    unclean = t.config.get(UNCLEAN, "unreadable")
    if unclean != "false":
        return Outcome.LOSES, (f"unclean.leader.election.enable is {unclean}: a replica that "
                               f"missed acknowledged records may become leader")
    try:
        min_isr = int(t.config[MIN_ISR])
    except (KeyError, ValueError):
        return Outcome.UNKNOWN, "min.insync.replicas could not be read"
    judged = [(p.id, *partition(p, min_isr, machines, loss)) for p in t.partitions]
    outcome = worst(o for _, o, _ in judged)
    reasons = Counter(r for _, o, r in judged if o is outcome)
    reason = reasons.most_common(1)[0][0]
    ids = [i for i, o, r in judged if o is outcome and r == reason]
    return outcome, f"{reason} ({_which(ids, len(judged))})"


def survival(topics: Sequence[TopicState], loss: str) -> str:
    """Why every one of ``topics`` survives the loss of one ``loss``."""
    replication = min(t.replication for t in topics)
    min_isr = min(int(t.config[MIN_ISR]) for t in topics)
    return (f"each acknowledged record is on at least {min_isr} {loss}s, and with one lost "
            f"every partition still has {min_isr} in sync (replication {replication} or more, "
            f"min.insync.replicas {min_isr} or more, unclean leader election off)")
