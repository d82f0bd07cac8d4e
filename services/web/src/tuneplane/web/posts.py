"""What the HTTP reporting path stores: lifecycle events, log lines and reports, each post
once, by its id (a resent post has no second effect)."""

from __future__ import annotations

import json
from typing import Any

from tuneplane.common.db import Connection
from tuneplane.telemetry.v1.identity import MemberKey

EVENT = """
INSERT INTO attempt_events (run_id, attempt, member, id, event, at, detail)
VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb) ON CONFLICT DO NOTHING RETURNING 1
"""

LOGS = """
INSERT INTO attempt_logs (run_id, attempt, member, id, line_no, at, level, message)
SELECT $1, $2, $3, $4, n - 1, at, level, message
FROM unnest($5::float8[], $6::text[], $7::text[]) WITH ORDINALITY AS l(at, level, message, n)
ON CONFLICT DO NOTHING RETURNING 1
"""

REPORT = """
INSERT INTO attempt_reports (run_id, attempt, member, id, name, body)
VALUES ($1, $2, $3, $4, $5, $6::jsonb) ON CONFLICT DO NOTHING RETURNING 1
"""


async def add_event(conn: Connection, member: MemberKey, event_id: str, event: str, at: float,
                    detail: dict[str, Any]) -> bool:
    """Store a lifecycle event; False when its id was stored before."""
    done = await conn.fetchval(EVENT, member.run_id, member.attempt, member.member, event_id,
                               event, at, json.dumps(detail))
    return done is not None


async def add_logs(conn: Connection, member: MemberKey, post_id: str,
                   lines: list[tuple[float, str, str]]) -> bool:
    """Store a post's (at, level, message) lines; False when its id was stored before."""
    inserted = await conn.fetch(LOGS, member.run_id, member.attempt, member.member, post_id,
                                [at for at, _, _ in lines], [level for _, level, _ in lines],
                                [message for _, _, message in lines])
    return bool(inserted)


async def add_report(conn: Connection, member: MemberKey, report_id: str, name: str,
                     body: str) -> bool:
    """Store a report (``body`` as JSON text); False when its id was stored before."""
    done = await conn.fetchval(REPORT, member.run_id, member.attempt, member.member, report_id,
                               name, body)
    return done is not None
