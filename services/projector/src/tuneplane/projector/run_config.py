"""What the runs table shows of a run beyond its totals, kept in the transaction that adds
its batches: each member's settings (``run_config``: the latest entry of each key, at most
``MAX_CONFIG_KEYS`` keys per attempt and member) and each series' summary
(``series_stats``: points, finite minimum and maximum, the last point read).

"Latest" and "last" are by the declaring batch's seal time, so a batch projected late (a
redrive, a batch that waited in a spool) never replaces what a later batch said.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tuneplane.common.db import Connection
from tuneplane.projector.projection import ConfigRow, Projection
from tuneplane.telemetry.v1.limits import MAX_CONFIG_KEYS

log = logging.getLogger("tuneplane.projector")

KEYS_HELD = """
SELECT count(*) AS held, coalesce(array_agg(key) FILTER (WHERE key = ANY($4::text[])), '{}')
       AS present
FROM run_config WHERE run_id = $1 AND attempt = $2 AND member = $3
"""

UPSERT_CONFIG = """
INSERT INTO run_config AS c (run_id, attempt, member, key, value, origin, source, run_path,
                             wall_time, sealed_at)
SELECT $1, $2, $3, k, v::jsonb, o, s, p, w, $4
FROM unnest($5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::float8[])
     AS u(k, v, o, s, p, w)
ON CONFLICT (run_id, attempt, member, key) DO UPDATE SET
    value = excluded.value, origin = excluded.origin, source = excluded.source,
    run_path = excluded.run_path, wall_time = excluded.wall_time, sealed_at = excluded.sealed_at
WHERE excluded.sealed_at >= c.sealed_at
"""

UPSERT_STATS = """
INSERT INTO series_stats AS s (series_id, points, v_min, v_max, step_last, v_last,
                               last_sealed_at)
SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::float8[], $4::float8[], $5::bigint[],
                     $6::float8[], $7::float8[])
ON CONFLICT (series_id) DO UPDATE SET
    points = s.points + excluded.points,
    v_min = least(s.v_min, excluded.v_min), v_max = greatest(s.v_max, excluded.v_max),
    step_last = CASE WHEN excluded.last_sealed_at >= s.last_sealed_at
                     THEN excluded.step_last ELSE s.step_last END,
    v_last = CASE WHEN excluded.last_sealed_at >= s.last_sealed_at
                  THEN excluded.v_last ELSE s.v_last END,
    last_sealed_at = greatest(s.last_sealed_at, excluded.last_sealed_at)
"""


async def keep_config(conn: Connection, projection: Projection) -> int:
    """Store the batch's entries (the last of a key it repeats); a key past the member's
    bound is left out and logged. Returns the entries left out."""
    latest: dict[str, ConfigRow] = {row.key: row for row in projection.config}
    if not latest:
        return 0
    member = projection.key.member
    ids = (member.run_id, member.attempt, member.member)
    held = await conn.fetchrow(KEYS_HELD, *ids, list(latest))
    assert held is not None  # an aggregate: always a row
    new = [k for k in latest if k not in set(held["present"])]
    room = max(0, MAX_CONFIG_KEYS - held["held"])
    dropped = new[room:]
    for key in dropped:
        del latest[key]
    if dropped:
        log.warning("batch %s: %d config keys left out, over the %d keys of %s "
                    "(first: %r)", projection.key, len(dropped), MAX_CONFIG_KEYS, member,
                    dropped[0])
    rows = list(latest.values())
    await conn.execute(UPSERT_CONFIG, *ids, projection.sealed_at, [r.key for r in rows],
                       [json.dumps(r.value) for r in rows], [r.origin for r in rows],
                       [r.source for r in rows], [r.run_path for r in rows],
                       [r.wall_time for r in rows])
    return len(dropped)


def either(pick: Callable[[float, float], float], a: float | None,
           b: float | None) -> float | None:
    """``pick`` of the two, NULL (None) ignored as PostgreSQL's least and greatest do."""
    return b if a is None else a if b is None else pick(a, b)


@dataclass(slots=True)
class Stats:
    points: int
    v_min: float | None
    v_max: float | None
    step_last: int
    v_last: float
    sealed_at: float

    def add(self, later: Stats) -> None:
        """Fold in a chunk read after this one (or sealed at the same time)."""
        self.points += later.points
        self.v_min = either(min, self.v_min, later.v_min)
        self.v_max = either(max, self.v_max, later.v_max)
        if later.sealed_at >= self.sealed_at:
            self.step_last, self.v_last, self.sealed_at = (later.step_last, later.v_last,
                                                           later.sealed_at)


async def keep_stats(conn: Connection, chunks: Sequence[tuple[int, Stats]]) -> None:
    """Fold the group's chunks (series id, their figures; in the order read) into their
    series' summaries: one statement."""
    folded: dict[int, Stats] = {}
    for series_id, stats in chunks:
        if series_id in folded:
            folded[series_id].add(stats)
        else:
            folded[series_id] = stats
    if not folded:
        return
    ids = sorted(folded)
    await conn.execute(UPSERT_STATS, ids, *(
        [getattr(folded[i], field) for i in ids]
        for field in ("points", "v_min", "v_max", "step_last", "v_last", "sealed_at")))
