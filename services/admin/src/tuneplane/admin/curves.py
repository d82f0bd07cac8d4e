"""``tuneplane-admin curves``: a run's curves read back from the read models, raw or
through the attempt's frozen mapping."""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from dataclasses import dataclass

import asyncpg

from tuneplane.admin.settings import AdminSettings
from tuneplane.common.chunks import stored
from tuneplane.common.chunks.blob import Codec
from tuneplane.common.db import Connection
from tuneplane.controlplane import mapping

SERIES_OF_RUN = """
SELECT s.series_id, s.attempt, s.member, s.source, s.run_path, s.tag,
       sum(c.n)::bigint AS points, min(c.step_min) AS step_min, max(c.step_max) AS step_max
FROM series s JOIN curve_chunks c USING (series_id)
WHERE s.run_id = $1 AND ($2::int IS NULL OR s.attempt = $2)
GROUP BY s.series_id
ORDER BY s.attempt, s.member, s.source, s.run_path, s.tag
"""

POINTS_OF_SERIES = f"""
SELECT {stored.SELECTED} FROM curve_chunks c WHERE c.series_id = $1
ORDER BY c.step_min, c.batch_id, c.chunk_index
"""


@dataclass(frozen=True, slots=True)
class SeriesSummary:
    series_id: int
    attempt: int
    member: str
    source: str
    run_path: str  # TensorBoard's run below the log directory; '' for the root
    tag: str
    points: int
    step_min: int
    step_max: int


@dataclass(frozen=True, slots=True)
class Point:
    step: int
    wall_time: float
    value: float


async def series_of_run(conn: Connection, run_id: str,
                        attempt: int | None = None) -> list[SeriesSummary]:
    rows = await conn.fetch(SERIES_OF_RUN, run_id, attempt)
    return [SeriesSummary(**dict(row)) for row in rows]


async def points_of_series(conn: Connection, series_id: int) -> list[Point]:
    """Every point of the series, by step then wall time."""
    codec = Codec()
    found = stored.in_step_order([stored.points_of(row, codec) for row in await conn.fetch(
        POINTS_OF_SERIES, series_id)])
    return [Point(*point) for point in zip(found.steps.tolist(), found.wall_times.tolist(),
                                           found.values.tolist(), strict=True)]


async def print_curves(database_url: str, run_id: str, attempt: int | None, points: bool,
                       expect: int, wait_seconds: float) -> int:
    conn = await asyncpg.connect(database_url)
    try:
        deadline = time.monotonic() + wait_seconds
        summaries = await series_of_run(conn, run_id, attempt)
        while sum(s.points for s in summaries) < expect and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
            summaries = await series_of_run(conn, run_id, attempt)
        if not summaries:
            print(f"run {run_id}: no curves", file=sys.stderr)
            return 1
        print(f"{'attempt':>7}  {'member':<12} {'source':<16} {'run':<16} {'tag':<24} "
              f"{'points':>8} steps")
        for s in summaries:
            print(f"{s.attempt:>7}  {s.member:<12} {s.source:<16} {s.run_path or '.':<16} "
                  f"{s.tag:<24} {s.points:>8} {s.step_min}..{s.step_max}")
            if points:
                for p in await points_of_series(conn, s.series_id):
                    print(f"{'':>9}step {p.step:>10}  value {p.value!r:<24} wall {p.wall_time:.3f}")
        stored = sum(s.points for s in summaries)
        if stored < expect:
            print(f"run {run_id}: {stored} of the {expect} expected points after {wait_seconds}s",
                  file=sys.stderr)
            return 1
        return 0
    finally:
        await conn.close()


def series_name(ref: mapping.SeriesRef) -> str:
    """source/tag, with the TensorBoard run in brackets when it is not the root."""
    run = f"[{ref.run_path}]" if ref.run_path else ""
    return f"{ref.source}{run}/{ref.tag}"


async def print_canonical(database_url: str, run_id: str, attempt: int) -> int:
    conn = await asyncpg.connect(database_url)
    try:
        resolution = await mapping.canonical(conn, run_id, attempt)
    finally:
        await conn.close()
    for curve in resolution.curves:
        semantics = ", ".join(f"{k} {v}" for k, v in (("goal", curve.goal), ("unit", curve.unit))
                              if v) or "no goal or unit declared"
        kind = "aggregate" if curve.aggregate else "per member"
        print(f"{curve.name} ({semantics}; {kind})")
        for ref in curve.series:
            print(f"    {ref.member:<12} {series_name(ref)}")
    for ref in resolution.unmapped:
        print(f"unmapped (unknown semantics): {ref.member:<12} {series_name(ref)}")
    for ref in resolution.not_owner:
        print(f"ignored (aggregate not from its owner): {ref.member:<12} {series_name(ref)}")
    return 0


def cmd_curves(args: argparse.Namespace, settings: AdminSettings) -> int:
    if args.canonical:
        if args.attempt is None:
            raise ValueError("--canonical needs --attempt")
        return asyncio.run(print_canonical(settings.database_url.get(), args.run, args.attempt))
    return asyncio.run(print_curves(settings.database_url.get(), args.run, args.attempt,
                                    args.points, args.expect, args.timeout))


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    c = sub.add_parser("curves", help="print a run's curves from PostgreSQL")
    c.add_argument("run")
    c.add_argument("--attempt", type=int)
    c.add_argument("--points", action="store_true", help="print every point too")
    c.add_argument("--canonical", action="store_true",
                   help="canonical curves through the attempt's frozen mapping")
    c.add_argument("--expect", type=int, default=0,
                   help="wait until the run has at least this many points")
    c.add_argument("--timeout", type=float, default=60.0,
                   help="seconds to wait for --expect (default 60)")
    c.set_defaults(func=cmd_curves)
