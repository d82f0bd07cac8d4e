"""Retention per project: a project that keeps its runs ``N`` days (``keep_runs_days``) has
each run deleted ``N`` days after it ended, as an owner's deletion is (``deletions.record``,
by ``RETENTION``), then purged once the undo window ends (``tuneplane-projector purge``).
One that keeps rich records ``M`` days (``keep_rich_days``) has each run's rich records
expired ``M`` days after it ended (``rich_expiries``; its curves stay), purged likewise.

A run ended when its last attempt did; a run with no attempt, when it was created; a run
known only by its telemetry (the default project's), at its last batch. A run with a live
attempt is never due (checked again under the run's lock as it is deleted), and a run whose
deletion by retention was taken back is kept. ``apply`` is safe on several replicas at
once: a deletion recorded by another in the meantime is skipped (``AlreadyDeleted``).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from tuneplane.common.db import Connection
from tuneplane.controlplane import deletions, runs
from tuneplane.controlplane.errors import NotFound, ProjectNotFound
from tuneplane.controlplane.projects import DEFAULT

#: Who a deletion by retention names.
RETENTION = "retention"

#: When each run ended: managed runs at their last attempt's end (or creation), the default
#: project's runs known only by telemetry at their last batch ($2: live states, $3: the
#: default project).
ENDED = """
WITH ended AS (
    SELECT r.run_id, r.project, coalesce(max(a.ended_at), r.created_at) AS ended_at,
           bool_or(a.state = ANY($2::text[])) AS live
    FROM runs r LEFT JOIN attempts a USING (run_id) GROUP BY r.run_id, r.project
    UNION ALL
    SELECT s.run_id, $3, max(s.last_batch_at), false FROM member_summaries s
    WHERE NOT EXISTS (SELECT 1 FROM runs r WHERE r.run_id = s.run_id) GROUP BY s.run_id
)
"""
#: Runs due at ``$1`` (now); one whose deletion by retention ($4) was taken back is kept.
DUE = ENDED + """
SELECT e.run_id, e.project FROM ended e JOIN projects p USING (project)
WHERE p.keep_runs_days IS NOT NULL AND NOT coalesce(e.live, false)
  AND e.ended_at < $1::timestamptz - make_interval(days => p.keep_runs_days)
  AND NOT EXISTS (SELECT 1 FROM deletions d WHERE d.run_id = e.run_id AND d.attempt = 0
                  AND (d.undone_at IS NULL OR d.deleted_by = $4))
ORDER BY e.run_id
"""
#: Runs whose rich records are due at ``$1``, expired there and then (purged ``$4`` seconds
#: later), those of the attempts it has had; a deleted run is purged whole instead.
EXPIRE_RICH = ENDED + """
INSERT INTO rich_expiries (run_id, project, attempt_upto, purge_after)
SELECT e.run_id, e.project,
       greatest((SELECT max(a.attempt) FROM attempts a WHERE a.run_id = e.run_id),
                (SELECT max(b.attempt) FROM batch_ledger b WHERE b.run_id = e.run_id), 0),
       now() + make_interval(secs => $4)
FROM ended e JOIN projects p USING (project)
WHERE p.keep_rich_days IS NOT NULL AND NOT coalesce(e.live, false)
  AND e.ended_at < $1::timestamptz - make_interval(days => p.keep_rich_days)
  AND NOT EXISTS (SELECT 1 FROM deletions d WHERE d.run_id = e.run_id AND d.attempt = 0
                  AND d.undone_at IS NULL)
ON CONFLICT (run_id) DO NOTHING
RETURNING run_id, project
"""


@dataclass
class Applied:
    """What one pass did: the runs it deleted, by project."""

    deleted: dict[str, list[str]] = field(default_factory=dict)
    rich_expired: dict[str, list[str]] = field(default_factory=dict)

    @property
    def runs(self) -> int:
        return sum(len(v) for v in self.deleted.values())


async def keep_runs(conn: Connection, project: str, days: int | None) -> None:
    """Keep the project's runs ``days`` days after they end (None: until deleted)."""
    await _keep(conn, project, "keep_runs_days", "runs", days)


async def keep_rich(conn: Connection, project: str, days: int | None) -> None:
    """Keep the rich records of the project's runs ``days`` days after the runs end (None:
    as long as the runs). Expiries whose purge has not started are taken back: the next
    pass expires what is due then."""
    async with conn.transaction():
        await _keep(conn, project, "keep_rich_days", "rich records", days)
        await conn.execute("DELETE FROM rich_expiries WHERE project = $1 AND "
                           "purge_started_at IS NULL", project)


async def _keep(conn: Connection, project: str, column: str, what: str,
                days: int | None) -> None:
    if days is not None and days < 1:
        raise ValueError(f"{what} are kept at least a day after their run ends, not {days}")
    if await conn.fetchval(f"UPDATE projects SET {column} = $2 WHERE project = $1 "
                           "RETURNING 1", project, days) is None:
        raise ProjectNotFound(f"no project {project!r}")


async def apply(conn: Connection, now: dt.datetime, *, undo_seconds: float) -> Applied:
    """Delete every run due at ``now``; each is purged ``undo_seconds`` later."""
    done = Applied()
    for row in await conn.fetch(DUE, now, list(runs.LIVE_STATES), DEFAULT, RETENTION):
        try:
            await deletions.record(conn, row["run_id"], row["project"], by=RETENTION,
                                   undo_seconds=undo_seconds, ended_only=True)
        except (deletions.AlreadyDeleted, deletions.StillLive, NotFound):
            continue  # another replica's, started again, or gone since
        done.deleted.setdefault(row["project"], []).append(row["run_id"])
    for row in await conn.fetch(EXPIRE_RICH, now, list(runs.LIVE_STATES), DEFAULT,
                                float(undo_seconds)):
        done.rich_expired.setdefault(row["project"], []).append(row["run_id"])
    return done
