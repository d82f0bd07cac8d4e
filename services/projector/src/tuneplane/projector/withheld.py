"""What no projection of the topic writes (the live projector, replay, redrive, rebuild,
and the archive pass): the batches of a run or attempt whose deletion is being purged, and
the rich records of a run whose rich records' expiry is (``deletions``, ``rich_expiries``:
both in public, outside the read models a rebuild swaps).

Asked inside the writer's transaction, under READ COMMITTED: a purge's mark committed
before it is seen, and the purge waits out the transactions begun before its mark.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from tuneplane.common.db import Connection
from tuneplane.projector.projection import Projection

#: The runs and attempts of ``$1`` whose deletion is being purged (or was): attempt 0, the
#: whole run.
PURGED = """
SELECT run_id, attempt FROM deletions WHERE run_id = ANY($1::text[])
  AND purge_started_at IS NOT NULL AND undone_at IS NULL
"""
#: The runs of ``$1`` whose rich records' expiry is being purged (or was), and the last
#: attempt it takes.
RICH_EXPIRED = """
SELECT run_id, attempt_upto FROM rich_expiries WHERE run_id = ANY($1::text[])
  AND purge_started_at IS NOT NULL
"""

Purged = set[tuple[str, int]]


async def purged(conn: Connection, runs: Sequence[str]) -> Purged:
    return {(r["run_id"], r["attempt"]) for r in await conn.fetch(PURGED, sorted(set(runs)))}


def of_purged(withheld: Purged, run_id: str, attempt: int) -> bool:
    """Whether a batch of ``run_id``'s ``attempt`` is of a deletion being purged."""
    return (run_id, 0) in withheld or (run_id, attempt) in withheld


Expired = dict[str, int]  # run → the last attempt whose rich records expired


async def rich_expired(conn: Connection, runs: Sequence[str]) -> Expired:
    return {r["run_id"]: r["attempt_upto"]
            for r in await conn.fetch(RICH_EXPIRED, sorted(set(runs)))}


def of_expired(expired: Expired, run_id: str, attempt: int) -> bool:
    """Whether a batch's rich records are of an expiry being purged."""
    return attempt <= expired.get(run_id, -1)


async def not_purged(conn: Connection, projections: Sequence[Projection]) -> list[bool]:
    """Per batch, whether it is written: not of a deletion being purged."""
    withheld = await purged(conn, [p.key.member.run_id for p in projections])
    return [not of_purged(withheld, p.key.member.run_id, p.key.member.attempt)
            for p in projections]


async def without_expired_rich(conn: Connection,
                               projections: Sequence[Projection]) -> Sequence[Projection]:
    """The batches, those of runs whose rich records expired without them."""
    runs = [p.key.member.run_id for p in projections if p.rich]
    if not runs:
        return projections
    expired = await rich_expired(conn, runs)
    return [dataclasses.replace(p, rich=[])
            if of_expired(expired, p.key.member.run_id, p.key.member.attempt) else p
            for p in projections]
