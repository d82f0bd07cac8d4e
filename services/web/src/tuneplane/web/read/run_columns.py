"""Columns the runs table may add, each of the run's latest attempt: a setting
(``config:optimizer.lr``) or a series' summary (``metric:loss:last``, ``:min`` or ``:max``;
the series is named by its tag or by the canonical name the attempt's metric mapping gives
it). A run whose attempt has several such series (members, sources, run paths) shows the
first by member, source and run path, as a setting the first member by name that declared
it.

Columns are filtered (``0>=0.001``: the first column at least 0.001; ``1=adam``;
``1~res``: text holding "res") and sorted in SQL. The SQL is built from this module's text
only: a column's key and a filter's value are parameters, its kind, aggregate and operator
come from closed sets.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Final, Literal

from tuneplane.common.db import Connection
from tuneplane.web.read.visible import attempt_kept, in_projects, run_and_attempt_kept

#: Columns one view may add (each costs an index lookup per run it shows or sorts).
MAX_COLUMNS: Final = 8
Aggregate = Literal["last", "min", "max"]
STAT_COLUMN: Final = {"last": "v_last", "min": "v_min", "max": "v_max"}
OPERATORS: Final = ("<=", ">=", "!=", "=", "<", ">", "~")
SPEC = re.compile(r"(config):(?P<key>.+)|(metric):(?P<tag>.+):(?P<agg>last|min|max)")
FILTER = re.compile(r"(?P<column>[0-9])(?P<op><=|>=|!=|=|<|>|~)(?P<value>.*)", re.DOTALL)


#: The row's attempt is not deleted (a deleted run's row is not listed at all).
KEPT: Final = attempt_kept("v.run_id", "v.attempt")


class ColumnError(ValueError):
    """A column or filter the table cannot take; the message says which and why."""


@dataclass(frozen=True, slots=True)
class Column:
    kind: Literal["config", "metric"]
    key: str  # the setting's key, or the series' tag or canonical name
    aggregate: Aggregate | None = None

    @classmethod
    def parse(cls, spec: str) -> Column:
        found = SPEC.fullmatch(spec)
        if found is None:
            raise ColumnError(f"column {spec!r} is not config:KEY or metric:TAG:last|min|max")
        if found["key"] is not None:
            return cls("config", found["key"])
        aggregate: Aggregate = found["agg"]  # type: ignore[assignment]  # the regex's three
        return cls("metric", found["tag"], aggregate)

    @property
    def spec(self) -> str:
        return f"config:{self.key}" if self.kind == "config" else \
            f"metric:{self.key}:{self.aggregate}"

    def sql(self, parameter: int) -> str:
        """Its value (jsonb) for the row ``v`` of the table, the key in ``$parameter``."""
        if self.kind == "config":
            return (f"(SELECT c.value FROM run_config c WHERE c.run_id = v.run_id AND "
                    f"c.attempt = v.attempt AND c.key = ${parameter} AND {KEPT} "
                    f"ORDER BY c.member LIMIT 1)")
        stat = STAT_COLUMN[self.aggregate or "last"]
        return (f"(SELECT to_jsonb(t.{stat}) FROM series s JOIN series_stats t USING (series_id)"
                f" WHERE s.run_id = v.run_id AND s.attempt = v.attempt AND {KEPT}"
                f" AND (s.tag = ${parameter}"
                f" OR s.tag IN (SELECT m->>'tag' FROM attempt_mappings a, "
                f"jsonb_array_elements(a.mapping) m WHERE a.run_id = v.run_id AND "
                f"a.attempt = v.attempt AND m->>'name' = ${parameter}))"
                f" ORDER BY s.member, s.source, s.run_path LIMIT 1)")


@dataclass(frozen=True, slots=True)
class Filter:
    column: int
    operator: str
    value: str | float  # a JSON literal ("=", "!="), a number ("<" ...), or text ("~")

    @classmethod
    def parse(cls, text: str, columns: int) -> Filter:
        found = FILTER.fullmatch(text)
        if found is None:
            raise ColumnError(f"filter {text!r} is not COLUMN OPERATOR VALUE (0>=0.01, 1=adam, "
                              f"1~res; operators {' '.join(OPERATORS)})")
        column, operator, given = int(found["column"]), found["op"], found["value"]
        if column >= columns:
            raise ColumnError(f"filter {text!r} names column {column}; the view has {columns}")
        value: str | float = given
        if operator in ("<", "<=", ">", ">="):
            value = literal(given)  # checked next
            if not isinstance(value, float):
                raise ColumnError(f"filter {text!r}: {operator} compares numbers, and "
                                  f"{given!r} is not one")
        elif operator in ("=", "!="):
            value = json.dumps(literal(given))
        return cls(column, operator, value)

    def sql(self, column: str, parameter: int) -> str:
        if self.operator == "~":
            return (f"(jsonb_typeof({column}) = 'string' AND "
                    f"strpos(lower({column} #>> '{{}}'), lower(${parameter})) > 0)")
        if self.operator == "=":
            return f"{column} = ${parameter}::jsonb"
        if self.operator == "!=":
            return f"{column} IS DISTINCT FROM ${parameter}::jsonb"
        # (CASE, not AND: PostgreSQL may cast before it tests the type.)
        return (f"(CASE WHEN jsonb_typeof({column}) = 'number' THEN ({column})::float8 END) "
                f"{self.operator} ${parameter}::float8")


def literal(text: str) -> float | bool | str:
    """What ``=`` compares with: a number, true or false, else the text itself."""
    if text in ("true", "false"):
        return text == "true"
    try:
        number = float(text)
    except ValueError:
        return text
    return number if number == number and abs(number) != float("inf") else text


#: Keys each kind of column offers, at most (the page's pickers; a key may still be typed).
MAX_OFFERED: Final = 500
OFFERED = """
WITH visible AS (
    SELECT DISTINCT t.run_id, t.attempt FROM member_summaries t LEFT JOIN runs r USING (run_id)
    WHERE """ + in_projects("coalesce(r.project, 'default')", "$1") + """
      AND ($2::text IS NULL OR coalesce(r.project, 'default') = $2)
      AND """ + run_and_attempt_kept("t.run_id", "t.attempt") + """
)
SELECT 'config' AS kind, k AS key FROM (
    SELECT DISTINCT key AS k FROM run_config JOIN visible USING (run_id, attempt)
    ORDER BY 1 LIMIT $3) c
UNION ALL
SELECT 'metric', k FROM (
    SELECT DISTINCT tag AS k FROM series JOIN visible USING (run_id, attempt)
    ORDER BY 1 LIMIT $3) s
UNION ALL
SELECT 'name', k FROM (
    SELECT DISTINCT m->>'name' AS k FROM attempt_mappings a JOIN visible USING (run_id, attempt),
           jsonb_array_elements(a.mapping) m ORDER BY 1 LIMIT $3) n
"""


async def offered(conn: Connection, projects: list[str] | None,
                  project: str | None) -> dict[str, list[str]]:
    """The settings' keys, series tags and canonical names of the runs the caller may view
    (of ``project``), each sorted, at most ``MAX_OFFERED``."""
    found: dict[str, list[str]] = {"config": [], "metric": [], "name": []}
    for row in await conn.fetch(OFFERED, projects, project, MAX_OFFERED):
        found[row["kind"]].append(row["key"])
    return found
