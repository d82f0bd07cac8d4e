"""What a deployment's stores can claim of the loss of one machine, as a pure function of
the facts read from them (``facts``): for each part an outcome and the reason that decides
it. Kafka is also judged against the loss of one broker (three brokers on one machine
survive a broker, not the machine).

The outcomes: it **survives** (nothing acknowledged is lost and writes go on), it **stops**
(nothing acknowledged is lost, but writes are refused until the lost machine or a
replacement is back), it **loses** (something acknowledged can be lost), or **unknown**
(the store does not tell, or could not be read). Only *survives* meets
``--require multi-machine``; ``--assume PART`` takes a part's survival on the operator's word.
"""

from __future__ import annotations

import re

from tuneplane.admin.durability import kafka_claims
from tuneplane.admin.durability.facts import (
    KAFKA,
    POSTGRESQL,
    S3,
    KafkaFacts,
    PostgresFacts,
    Profile,
    S3Facts,
    Unreachable,
)
from tuneplane.admin.durability.outcomes import (
    BROKER,
    MACHINE,
    Assessment,
    Claim,
    Outcome,
    worst,
)
from tuneplane.admin.durability.place import elsewhere, on_loopback
from tuneplane.common.kafka.cluster import OFFSETS_TOPIC


def assess(profile: Profile) -> Assessment:
    """The claims ``profile``'s facts support, part by part (Kafka's broker claim first)."""
    claims = [*kafka(profile.kafka, profile.topics), postgresql(profile.postgresql),
              s3(profile.s3)]
    return Assessment(tuple(_assumed(c) if c.part in profile.assumed and c.loss == MACHINE
                            else c for c in claims))


def _assumed(claim: Claim) -> Claim:
    if claim.outcome is Outcome.SURVIVES:
        return claim
    return Claim(claim.part, claim.loss, claim.outcome,
                 f"{claim.reason}; taken on the operator's word (--assume {claim.part})",
                 assumed=True)


def _unreadable(found: Unreachable, loss: str = MACHINE) -> Claim:
    return Claim(found.part, loss, Outcome.UNKNOWN, f"could not be read: {found.error}")


def kafka(found: KafkaFacts | Unreachable, topics: tuple[str, ...]) -> list[Claim]:
    if isinstance(found, Unreachable):
        return [_unreadable(found, BROKER), _unreadable(found)]
    cluster = found.cluster
    # Kafka creates the offsets topic when the first consumer group commits: until then it
    # holds nothing to lose.
    wanted = [t for t in cluster.topics if t.name in topics
              and (t.exists or t.name != OFFSETS_TOPIC)]
    if not wanted:
        return [Claim(KAFKA, loss, Outcome.UNKNOWN, "no topic of the project was asked about")
                for loss in (BROKER, MACHINE)]
    claims = []
    for loss, machines, told in (
            (BROKER, {b.id: f"broker {b.id}" for b in cluster.brokers}, ""),
            (MACHINE, *kafka_claims.machines(cluster.brokers))):
        judged = [(t.name, *kafka_claims.topic(t, machines, loss)) for t in wanted]
        outcome = worst(o for _, o, _ in judged)
        if outcome is Outcome.SURVIVES:
            reason = kafka_claims.survival(wanted, loss) + told
        else:  # topics alike named together, in the order asked
            alike: dict[str, list[str]] = {}
            for name, o, why in judged:
                if o is outcome:
                    alike.setdefault(why, []).append(name)
            reason = "; ".join(f"{', '.join(names)}: {why}" for why, names in alike.items())
        claims.append(Claim(KAFKA, loss, outcome, reason))
    return claims


def postgresql(found: PostgresFacts | Unreachable) -> Claim:
    if isinstance(found, Unreachable):
        return _unreadable(found)
    outcome, reason = _postgresql(found)
    return Claim(POSTGRESQL, MACHINE, outcome, reason)


def required_standbys(names: str) -> int:
    """How many synchronous standbys ``synchronous_standby_names`` has a commit wait for."""
    counted = re.match(r"^\s*(?:FIRST|ANY)?\s*(\d+)\s*\(.*\)\s*$", names, re.IGNORECASE)
    return int(counted[1]) if counted else 1


def _postgresql(pg: PostgresFacts) -> tuple[Outcome, str]:
    if pg.fsync != "on":
        return Outcome.LOSES, (f"fsync is {pg.fsync}: a crash of its machine can lose or "
                               f"corrupt committed transactions")
    if pg.synchronous_commit in ("off", "local"):
        return Outcome.LOSES, (f"synchronous_commit is {pg.synchronous_commit}: a commit is "
                               f"acknowledged before any standby has it")
    names = pg.synchronous_standby_names.strip()
    if not names:
        lagging = f" ({len(pg.standbys)} asynchronous standby(s) may lag)" if pg.standbys else ""
        return Outcome.LOSES, (
            f"synchronous_standby_names is empty: a commit is acknowledged once this server "
            f"alone has it{lagging} (a managed service that replicates its storage below "
            f"PostgreSQL shows none of it here: --assume postgresql)")
    if any(s.sync_state is None for s in pg.standbys):
        return Outcome.UNKNOWN, ("pg_stat_replication's columns are hidden from this role "
                                 "(grant it pg_read_all_stats)")
    required = required_standbys(names)
    away = [s for s in pg.standbys if s.state == "streaming"
            and s.sync_state in ("sync", "quorum", "potential")
            and elsewhere(s.address, pg.server_address)]
    synchronous = [s for s in away if s.sync_state in ("sync", "quorum")]
    if len(synchronous) < required:
        return Outcome.STOPS, (
            f"synchronous_standby_names is {names!r}, and {len(synchronous)} of the "
            f"{required} synchronous standby(s) it needs stream from another machine: "
            f"commits wait until they do")
    listed = ", ".join(f"{s.name} at {s.address}" for s in synchronous)
    if len(away) <= required:
        return Outcome.STOPS, (
            f"every commit reaches {listed} before it is acknowledged, but no other standby "
            f"could take its place: with one lost, commits wait")
    return Outcome.SURVIVES, (
        f"synchronous_commit is {pg.synchronous_commit}: every commit reaches {listed} before "
        f"it is acknowledged, and {len(away) - required} more standby(s) could take over; "
        f"PostgreSQL does not fail over by itself (promoting a standby is a failover "
        f"manager's or the operator's)")


def s3(found: S3Facts | Unreachable) -> Claim:
    if isinstance(found, Unreachable):
        return _unreadable(found)
    server = f" ({found.server})" if found.server else ""
    if not found.bucket_exists:
        return Claim(S3, MACHINE, Outcome.UNKNOWN, f"bucket {found.bucket} does not exist at "
                     f"{found.endpoint} (`tuneplane-admin init` creates it)")
    if on_loopback(found.host):
        return Claim(S3, MACHINE, Outcome.LOSES, (
            f"the endpoint {found.endpoint}{server} is on this machine (loopback): the "
            f"objects go with it, unless that server only forwards to a store elsewhere"))
    return Claim(S3, MACHINE, Outcome.UNKNOWN, (
        f"the S3 API does not say how {found.endpoint}{server} keeps copies: check its "
        f"provider or cluster (AWS S3 Standard keeps them in several availability zones, a "
        f"single-node server does not), then --assume s3"))
