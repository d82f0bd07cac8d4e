"""What each member's telemetry amounts to, kept in the transaction that adds its batches
to the ledger: its points and batches (``member_summaries``, which the runs table reads one
row per member of) and the spools they came from (``member_spools``: more than one when
its spool was replaced)."""

from __future__ import annotations

from collections.abc import Sequence

from tuneplane.common.db import Connection
from tuneplane.projector.projection import Projection
from tuneplane.telemetry.v1.identity import MemberKey

SUMMARISE = """
INSERT INTO member_summaries (run_id, attempt, member, points, batches, first_batch_at,
                              last_batch_at)
SELECT r, a, m, p, b, now(), now()
FROM unnest($1::text[], $2::integer[], $3::text[], $4::bigint[], $5::bigint[]) AS u(r, a, m, p, b)
ON CONFLICT (run_id, attempt, member) DO UPDATE SET
    points = member_summaries.points + EXCLUDED.points,
    batches = member_summaries.batches + EXCLUDED.batches,
    last_batch_at = EXCLUDED.last_batch_at
"""


SPOOLS = """
INSERT INTO member_spools (run_id, attempt, member, spool_epoch, batches, points,
                           first_batch_at)
SELECT r, a, m, e, b, p, now()
FROM unnest($1::text[], $2::integer[], $3::text[], $4::text[], $5::bigint[], $6::bigint[])
     AS u(r, a, m, e, b, p)
ON CONFLICT (run_id, attempt, member, spool_epoch) DO UPDATE SET
    batches = member_spools.batches + EXCLUDED.batches,
    points = member_spools.points + EXCLUDED.points
"""


async def count_spools(conn: Connection, fresh: Sequence[Projection]) -> None:
    """Add the group's new batches to the spools they came from (one statement)."""
    totals: dict[tuple[MemberKey, str], tuple[int, int]] = {}
    for projection in fresh:
        at = (projection.key.member, projection.key.spool_epoch)
        batches, points = totals.get(at, (0, 0))
        totals[at] = (batches + 1, points + projection.points)
    if not totals:
        return
    spools = sorted(totals, key=lambda s: (s[0].run_id, s[0].attempt, s[0].member, s[1]))
    await conn.execute(SPOOLS, [m.run_id for m, _ in spools], [m.attempt for m, _ in spools],
                       [m.member for m, _ in spools], [e for _, e in spools],
                       [totals[s][0] for s in spools], [totals[s][1] for s in spools])


async def summarise(conn: Connection, fresh: Sequence[Projection]) -> None:
    """Add the group's new batches to their members' summaries (one statement; a member's
    batches are on one partition, so no other worker writes its row meanwhile)."""
    totals: dict[MemberKey, tuple[int, int]] = {}
    for projection in fresh:
        points, batches = totals.get(projection.key.member, (0, 0))
        totals[projection.key.member] = (points + projection.points, batches + 1)
    if not totals:
        return
    members = sorted(totals, key=lambda m: (m.run_id, m.attempt, m.member))
    await conn.execute(SUMMARISE, [m.run_id for m in members], [m.attempt for m in members],
                       [m.member for m in members], [totals[m][0] for m in members],
                       [totals[m][1] for m in members])
