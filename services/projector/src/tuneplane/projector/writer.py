"""PostgreSQL writer of projections: one transaction per batch, ledger first."""

from __future__ import annotations

import asyncpg

from tuneplane.projector.projection import Projection

INSERT_LEDGER = """
INSERT INTO batch_ledger (run_id, attempt, member, batch_id, kafka_partition, kafka_offset,
                          points, sealed_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
ON CONFLICT DO NOTHING
RETURNING 1
"""

UPSERT_SERIES = """
WITH wanted AS (SELECT DISTINCT * FROM unnest($4::text[], $5::text[]) AS w(source, tag)),
inserted AS (
    INSERT INTO series (run_id, attempt, member, source, tag)
    SELECT $1, $2, $3, source, tag FROM wanted
    ON CONFLICT DO NOTHING
    RETURNING series_id, source, tag
)
SELECT series_id, source, tag FROM inserted
UNION ALL
SELECT s.series_id, s.source, s.tag FROM series s JOIN wanted w USING (source, tag)
WHERE s.run_id = $1 AND s.attempt = $2 AND s.member = $3
"""

CHUNK_COLUMNS = ("series_id", "batch_id", "chunk_index", "n", "step_min", "step_max", "v_min",
                 "v_max", "v_first", "v_last", "steps", "wall_times", "values")


class PostgresWriter:
    """Writes a projection; a batch identity already in the ledger has no effect."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self._pool = pool

    async def write(self, projection: Projection) -> bool:
        """Returns True when applied, False when the batch was a duplicate."""
        key, member = projection.key, projection.key.member
        async with self._pool.acquire() as conn, conn.transaction():
            fresh = await conn.fetchval(
                INSERT_LEDGER, member.run_id, member.attempt, member.member, key.batch_id,
                projection.meta.partition, projection.meta.offset, projection.points,
                projection.sealed_at)
            if fresh is None:
                return False
            if not projection.chunks:
                return True
            rows = await conn.fetch(
                UPSERT_SERIES, member.run_id, member.attempt, member.member,
                [c.source for c in projection.chunks], [c.tag for c in projection.chunks])
            series_ids = {(r["source"], r["tag"]): r["series_id"] for r in rows}
            await conn.copy_records_to_table(
                "curve_chunks", columns=CHUNK_COLUMNS,
                records=[(series_ids[(c.source, c.tag)], key.batch_id, c.chunk_index,
                          len(c.steps), c.step_min, c.step_max, c.v_min, c.v_max, c.v_first,
                          c.v_last, c.steps, c.wall_times, c.values)
                         for c in projection.chunks])
            return True
