"""The runs table: every run a caller may view (created ones with no telemetry yet, and
ones known only by their telemetry), filtered, sorted and paged in SQL. Telemetry totals
come from the member summaries the projector keeps (one row per member and attempt), not
from the ledger's batches.

A run known only by its telemetry has no runs row: it is the default project's, created
when its first batch was projected, with no managed attempt (state "none"). A run's state
is its latest managed attempt's. Sort keys and directions come from closed sets, so the
ORDER BY is built from this module's text only. Added columns (``run_columns``: settings and
series summaries of the latest attempt) are computed for the page's rows only, unless the
view sorts or filters by them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from tuneplane.common.db import Connection
from tuneplane.web.read.run_columns import Column, ColumnError, Filter
from tuneplane.web.read.visible import in_projects, run_kept

Sort = Literal["run_id", "project", "created", "last_telemetry", "points", "col0", "col1",
               "col2", "col3", "col4", "col5", "col6", "col7"]
Direction = Literal["asc", "desc"]
State = Literal["pending", "running", "finished", "failed", "cancelled", "timeout", "preempted",
                "none"]
TimeField = Literal["created", "last_telemetry"]

#: The column each sort key orders by; run_id breaks ties so pages do not overlap.
ORDER = {"run_id": "run_id", "project": "project", "created": "created_at",
         "last_telemetry": "last_batch_at", "points": "points"}
TIME_COLUMN = {"created": "created_at", "last_telemetry": "last_batch_at"}


@dataclass(frozen=True, slots=True)
class Query:
    """One view of the table, as the page's URL holds it."""
    projects: list[str] | None  # the caller's; None: every project (an admin)
    search: str | None = None
    project: str | None = None
    states: tuple[State, ...] = ()
    time_field: TimeField = "created"
    since: datetime | None = None
    until: datetime | None = None
    sort: Sort = "created"
    direction: Direction = "desc"
    limit: int = 50
    offset: int = 0
    columns: tuple[Column, ...] = ()
    filters: tuple[Filter, ...] = ()


LISTED = """
WITH telemetry AS (
    SELECT run_id, max(attempt) AS attempt, sum(points)::bigint AS points,
           min(first_batch_at) AS first_batch_at, max(last_batch_at) AS last_batch_at
    FROM member_summaries GROUP BY run_id
), managed AS (
    SELECT DISTINCT ON (run_id) run_id, attempt, state
    FROM attempts ORDER BY run_id, attempt DESC
), listed AS (
    SELECT coalesce(r.run_id, t.run_id) AS run_id, coalesce(r.project, 'default') AS project,
           coalesce(r.created_at, t.first_batch_at) AS created_at,
           nullif(greatest(coalesce(m.attempt, 0), coalesce(t.attempt, 0)), 0) AS attempt,
           m.attempt AS managed_attempt, m.state AS managed_state,
           coalesce(t.points, 0) AS points, t.last_batch_at
    FROM runs r FULL JOIN telemetry t ON t.run_id = r.run_id
    LEFT JOIN managed m ON m.run_id = coalesce(r.run_id, t.run_id)
), visible AS (
    SELECT run_id, project, created_at, attempt, points, last_batch_at,
           coalesce(managed_state, 'none') AS state
    FROM listed
    WHERE """ + in_projects("project", "$1") + """
      AND """ + run_kept("listed.run_id") + """
      AND ($2::text IS NULL OR strpos(lower(run_id), lower($2)) > 0)
      AND ($3::text IS NULL OR project = $3)
)
SELECT v.run_id, v.project, v.created_at, v.attempt, v.state, v.points, v.last_batch_at,
       (SELECT count(*) FROM member_summaries s
        WHERE s.run_id = v.run_id AND s.attempt = v.attempt) AS members,
       v.total{columns}
FROM (SELECT *, count(*) OVER () AS total FROM visible v{lateral}
      WHERE ($4::text[] IS NULL OR state = ANY($4::text[]))
        AND ($5::timestamptz IS NULL OR {time} >= $5)
        AND ($6::timestamptz IS NULL OR {time} < $6){filters}
      ORDER BY {order} {direction} NULLS LAST, run_id {direction}
      LIMIT $7 OFFSET $8) v
ORDER BY {outer_order} {direction} NULLS LAST, run_id {direction}
"""
#: The parameters before the added columns' keys and the filters' values.
FIXED_PARAMETERS = 8


def sql(query: Query) -> str:
    """The statement for ``query``'s sort, time field, columns and filters (closed sets and
    parameters, never user text). A column the view sorts or filters by is computed once a
    row, in a LATERAL subquery (OFFSET 0 keeps PostgreSQL from pulling it up and computing it
    again at each use); the others only for the page's rows."""
    values = [c.sql(FIXED_PARAMETERS + 1 + i) for i, c in enumerate(query.columns)]
    sorted_by = int(query.sort[3:]) if query.sort.startswith("col") else None
    used = sorted({f.column for f in query.filters}
                  | ({sorted_by} if sorted_by is not None else set()))
    lateral = ("\n      CROSS JOIN LATERAL (SELECT "
               + ", ".join(f"{values[i]} AS col{i}" for i in used) + " OFFSET 0) w"
               if used else "")
    inner = [f"w.col{i}" if i in used else value for i, value in enumerate(values)]
    filters = "".join(f"\n        AND {f.sql(inner[f.column], FIXED_PARAMETERS + 1 + i)}"
                      for i, f in enumerate(query.filters, start=len(query.columns)))
    if sorted_by is not None:
        order, outer_order = inner[sorted_by], f"col{sorted_by}"
    else:
        order = outer_order = ORDER[query.sort]
    shown = [f"v.col{i}" if i in used else value for i, value in enumerate(values)]
    return LISTED.format(order=order, outer_order=outer_order,
                         direction=query.direction.upper(), time=TIME_COLUMN[query.time_field],
                         lateral=lateral, filters=filters,
                         columns="".join(f",\n       {v} AS col{i}"
                                         for i, v in enumerate(shown)))


async def page(conn: Connection, query: Query) -> tuple[list[dict[str, Any]], int]:
    """The rows of one page and how many rows the whole view holds."""
    if query.sort.startswith("col") and int(query.sort[3:]) >= len(query.columns):
        raise ColumnError(f"sort {query.sort}: the view has {len(query.columns)} columns")
    statement = sql(query)
    args = (query.projects, query.search or None, query.project, list(query.states) or None,
            query.since, query.until)
    added = (*(c.key for c in query.columns), *(f.value for f in query.filters))
    rows = await conn.fetch(statement, *args, query.limit, query.offset, *added)
    if not rows and query.offset:  # past the end: the first row still counts the view
        rows_total = await conn.fetch(statement, *args, 1, 0, *added)
        return [], rows_total[0]["total"] if rows_total else 0
    total = rows[0]["total"] if rows else 0
    return [shown(dict(row), len(query.columns)) for row in rows], total


def shown(row: Mapping[str, Any], columns: int) -> dict[str, Any]:
    """A row as the API gives it: the added columns' values (JSON) in one list."""
    found = {k: v for k, v in row.items() if k != "total" and not k.startswith("col")}
    found["columns"] = [None if row[f"col{i}"] is None else json.loads(row[f"col{i}"])
                        for i in range(columns)]
    return found
