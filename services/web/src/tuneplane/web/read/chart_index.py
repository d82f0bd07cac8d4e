"""The Charts grid's index of an attempt: its charts (each canonical curve of the frozen
mapping, in the mapping's order, then each tag some series of no mapping has, by name) in
sections by name prefix, as TensorBoard groups tags. Sections come with their counts, a
section's charts a page at a time (keyset: after a chart's key), both filtered by a regular
expression, all in PostgreSQL: the page asks only for what it shows, in an attempt of
100,000 series too (migration 0036's index series_by_section makes a section's page a range
of it).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Final, Literal

import asyncpg

from tuneplane.common.db import Connection
from tuneplane.telemetry.v1.integration import MetricMapping

Kind = Literal["curve", "tag"]
KINDS: tuple[Kind, ...] = ("curve", "tag")
#: Past every curve's place in the mapping: a page after a tag holds no curve.
PAST_CURVES = 2**62


def section_of(column: str) -> str:
    """A name's section in SQL: its part before the first '/' ('' when none, or when it
    starts with '/'), as TensorBoard groups tags. Written as migration 0036's index has it."""
    return (f"CASE WHEN strpos({column}, '/') > 1 THEN left({column}, strpos({column}, '/') - 1)"
            " ELSE '' END")


class IndexQueryError(ValueError):
    """A parameter the index cannot take: the caller's to fix (422, naming it)."""

    def __init__(self, parameter: str, reason: str) -> None:
        super().__init__(f"{parameter}: {reason}")
        self.parameter = parameter


@dataclass(frozen=True, slots=True)
class ChartKey:
    """A chart as the grid keys it ("curve:loss", "tag:train/acc"): the pages' cursor."""

    kind: Kind
    name: str

    @classmethod
    def parse(cls, text: str) -> ChartKey:
        kind, colon, name = text.partition(":")
        if not colon or kind not in KINDS:
            raise IndexQueryError("after", f"{text!r} is not a chart's key (curve:NAME or "
                                           "tag:NAME, a page's next)")
        return cls("curve" if kind == "curve" else "tag", name)

    def __str__(self) -> str:
        return f"{self.kind}:{self.name}"


@dataclass(frozen=True, slots=True)
class Mappings:
    """What the index needs of an attempt's frozen mapping: its curves' names (each once,
    in order) and the (source, run path, tag) each mapping takes, None for any."""

    curves: tuple[str, ...] = ()
    sources: tuple[str | None, ...] = ()
    run_paths: tuple[str | None, ...] = ()
    tags: tuple[str, ...] = ()

    @classmethod
    def of(cls, mappings: list[MetricMapping] | None) -> Mappings:
        found = mappings or []
        return cls(tuple(dict.fromkeys(m.name for m in found)), tuple(m.source for m in found),
                   tuple(m.run_path for m in found), tuple(m.tag for m in found))

    def args(self) -> tuple[list[str], list[str | None], list[str | None], list[str]]:
        return list(self.curves), list(self.sources), list(self.run_paths), list(self.tags)


def unmapped_tags(where: str) -> str:
    """Each tag some series of no mapping has (as mapping.resolve decides), of the series
    ``s`` that ``where`` keeps, with its section: $1 run, $2 attempt, $4, $5, $6 the
    mappings' sources, run paths and tags. A tag no mapping names needs no look at its
    series' sources: that part reads the index series_by_section alone."""
    section = section_of("s.tag")
    return f"""
    (SELECT {section} AS section, s.tag FROM series s
     WHERE s.run_id = $1 AND s.attempt = $2 AND s.tag <> ALL($6::text[]) AND {where}
     GROUP BY 1, s.tag ORDER BY 1, s.tag)  -- in the index's order: no hash of every tag
    UNION ALL
    SELECT DISTINCT {section}, s.tag FROM series s
    WHERE s.run_id = $1 AND s.attempt = $2 AND s.tag = ANY($6::text[]) AND {where}
      AND NOT EXISTS (SELECT FROM unnest($4::text[], $5::text[], $6::text[])
                                   AS m(source, run_path, tag)
                      WHERE m.tag = s.tag AND (m.source IS NULL OR m.source = s.source)
                        AND (m.run_path IS NULL OR m.run_path = s.run_path))"""


# $7 the filter (NULL: none), $8 after this section, $9 sections at most.
SECTIONS = f"""
WITH counted AS MATERIALIZED (
    SELECT section, count(*) FILTER (WHERE $7::text IS NULL OR name ~* $7) AS charts,
           count(*) AS total
    FROM (SELECT {section_of("c.name")} AS section, c.name FROM unnest($3::text[]) AS c(name)
          UNION ALL
          SELECT t.section, t.tag FROM ({unmapped_tags("true")}) t) charts
    GROUP BY section)
SELECT a.charts AS all_charts, a.total AS all_total, p.section, p.charts, p.total
FROM (SELECT coalesce(sum(charts), 0)::bigint AS charts,
             coalesce(sum(total), 0)::bigint AS total FROM counted) a
LEFT JOIN LATERAL (
    SELECT * FROM counted
    WHERE charts > 0 AND ($8::text IS NULL OR (section = '', section) > ($8 = '', $8))
    ORDER BY section = '', section LIMIT $9) p ON true
ORDER BY p.section = '', p.section
"""

# $7 the sections, $8 the filter (NULL: none), $9 charts at most: every chart of a small
# index at once, each section's a range of series_by_section.
WHOLE = f"""
SELECT section, kind, name FROM (
    SELECT {section_of("c.name")} AS section, 'curve' AS kind, c.place, c.name
    FROM unnest($3::text[]) WITH ORDINALITY AS c(name, place)
    WHERE {section_of("c.name")} = ANY($7::text[]) AND ($8::text IS NULL OR c.name ~* $8)
    UNION ALL
    SELECT t.section, 'tag', 0, t.tag
    FROM ({unmapped_tags(f"{section_of('s.tag')} = ANY($7::text[])"
                         " AND ($8::text IS NULL OR s.tag ~* $8)")}) t) whole
ORDER BY section = '', section, kind, place, name LIMIT $9
"""

# $7 the section, $8 the filter (NULL: none), $9 after this curve's place (0: from the
# first), $10 after this tag (NULL: from the first), $11 charts at most.
PAGE = f"""
SELECT kind, name FROM (
    SELECT 'curve' AS kind, c.name, c.place
    FROM unnest($3::text[]) WITH ORDINALITY AS c(name, place)
    WHERE {section_of("c.name")} = $7 AND c.place > $9 AND ($8::text IS NULL OR c.name ~* $8)
    UNION ALL
    (SELECT 'tag', t.tag, 0
     FROM ({unmapped_tags(f"{section_of('s.tag')} = $7 AND ($10::text IS NULL OR s.tag > $10)"
                          " AND ($8::text IS NULL OR s.tag ~* $8)")}) t
     ORDER BY t.tag LIMIT $11)) page
ORDER BY kind, place, name LIMIT $11
"""


#: Seconds a filtered query may take before it is cancelled and the pattern refused: a
#: pattern PostgreSQL matches slowly must not hold the web's connections for the pool's
#: statement timeout (30 s).
FILTER_SECONDS: Final = 2.0
#: A backreference (``\1`` to ``\9``, not an escaped backslash before a digit): matching
#: one can take time exponential in a name's length.
BACKREFERENCE: Final = re.compile(r"(?<!\\)(?:\\\\)*\\[1-9]")


@contextmanager
def filter_refused(pattern: str | None) -> Iterator[None]:
    """PostgreSQL's refusal of the pattern (to compile it, or to run it: too complex, or
    past ``FILTER_SECONDS``) as the caller's error, naming the parameter."""
    try:
        yield
    except asyncpg.InvalidRegularExpressionError as exc:
        raise IndexQueryError("filter", f"{pattern!r} is not a regular expression PostgreSQL "
                                        f"takes: {exc}") from None
    except TimeoutError:  # asyncpg cancelled the statement on the server too
        raise IndexQueryError("filter", f"{pattern!r} took over {FILTER_SECONDS:g} s to match "
                                        "the attempt's names; ask with a simpler one") from None


def within(pattern: str | None) -> float | None:
    """The time a query filtered by ``pattern`` may take (None: unfiltered, the pool's)."""
    return None if pattern is None else FILTER_SECONDS


async def check_filter(conn: Connection, pattern: str | None) -> None:
    """Refuses a pattern PostgreSQL cannot read, or one with a backreference, before any
    query depends on rows to try it (an attempt without series would take any)."""
    if pattern is not None:
        if BACKREFERENCE.search(pattern):
            raise IndexQueryError("filter", f"{pattern!r} has a backreference (\\1 to \\9), "
                                            "which is not taken: matching one can take "
                                            "exponential time")
        with filter_refused(pattern):
            await conn.fetchval("SELECT '' ~* $1", pattern, timeout=FILTER_SECONDS)


@dataclass(frozen=True, slots=True)
class Sections:
    sections: list[dict[str, Any]]   # name, charts (the filter keeps), total[, entries]
    charts: int                      # the filter keeps, in every section
    total: int
    next: str | None                 # the last section's name when more may follow


async def sections(conn: Connection, run_id: str, attempt: int, mappings: Mappings, *,
                   pattern: str | None, after: str | None, limit: int,
                   whole: int = 0) -> Sections:
    """The sections with charts ``pattern`` keeps, by name ('' last), after ``after``, with
    their counts and those of the whole attempt; when ``pattern`` keeps at most ``whole``
    charts, each section with its charts (``entries``), so a small index is one answer."""
    await check_filter(conn, pattern)
    with filter_refused(pattern):
        rows = await conn.fetch(SECTIONS, run_id, attempt, *mappings.args(), pattern, after,
                                limit + 1, timeout=within(pattern))
    found = [{"name": r["section"], "charts": r["charts"], "total": r["total"]}
             for r in rows if r["section"] is not None]
    more = len(found) > limit
    shown, kept = found[:limit], rows[0]["all_charts"]
    if shown and kept <= whole:
        with filter_refused(pattern):
            charts = await conn.fetch(WHOLE, run_id, attempt, *mappings.args(),
                                      [s["name"] for s in shown], pattern, whole,
                                      timeout=within(pattern))
        for s in shown:
            s["entries"] = [ChartKey(r["kind"], r["name"]) for r in charts
                            if r["section"] == s["name"]]
    return Sections(shown, kept, rows[0]["all_total"],
                    found[limit - 1]["name"] if more else None)


@dataclass(frozen=True, slots=True)
class Page:
    charts: list[ChartKey]
    next: ChartKey | None  # the last chart's key when more follow


async def page(conn: Connection, run_id: str, attempt: int, mappings: Mappings, *,
               section: str, pattern: str | None, after: ChartKey | None,
               limit: int) -> Page:
    """The charts of ``section`` that ``pattern`` keeps, after ``after``: curves in the
    mapping's order, then tags by name."""
    await check_filter(conn, pattern)
    place, tag = 0, None  # the page starts after this curve's place, or this tag
    if after is not None and after.kind == "curve":
        if after.name not in mappings.curves:
            raise IndexQueryError("after", f"no canonical curve {after.name!r} in the "
                                           "attempt's mapping")
        place = mappings.curves.index(after.name) + 1
    elif after is not None:
        place, tag = PAST_CURVES, after.name
    with filter_refused(pattern):
        rows = await conn.fetch(PAGE, run_id, attempt, *mappings.args(), section, pattern,
                                place, tag, limit + 1, timeout=within(pattern))
    found = [ChartKey(r["kind"], r["name"]) for r in rows]
    return Page(found[:limit], found[limit - 1] if len(found) > limit else None)
