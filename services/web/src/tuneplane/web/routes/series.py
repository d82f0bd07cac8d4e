"""An attempt's series and curves over HTTP: the series list, one series' scalars (the
inspector's view: raw, or purged as TensorBoard serves them), the canonical index, a
canonical curve through the frozen mapping, and one tag's series across members and
TensorBoard runs (the chart of a tag no mapping names).

Answers are bounded: ``max_points`` and ``max_series`` are capped by the settings, which is
why ``router`` is built from them (the caps are in the OpenAPI schema too).
"""

import functools
import math
from collections.abc import Sequence
from typing import Annotated, Any, Literal

import asyncpg
import numpy as np
import orjson
from fastapi import APIRouter, HTTPException, Query, Response

from tuneplane.controlplane import mapping
from tuneplane.telemetry.v1.identity import MemberKey, SeriesKey
from tuneplane.telemetry.v1.names import json_number
from tuneplane.web import models
from tuneplane.web.auth.access import Viewer
from tuneplane.web.dependencies import Pool, State
from tuneplane.web.read import answers, listings, series_read
from tuneplane.web.read.columnar import ColumnAnswer, Floats
from tuneplane.web.read.downsample import METHOD
from tuneplane.web.read.purge import SEMANTICS
from tuneplane.web.read.side_by_side import side_by_side
from tuneplane.web.routes.params import AttemptNo, RunPath, Step
from tuneplane.web.state import WebState

Layout = Literal["rows", "columns"]
Format = Annotated[Layout, Query(
    description="rows: points as [step, wall_time, value] and buckets as objects; columns: "
                "one array per field ({steps, walls, values}; {step_lo, step_hi, count, "
                "min, max, last, wall}), what the Charts page reads")]


def json_numbers(values: Floats) -> Floats | list[float | str]:
    """Values as JSON carries them: NaN and infinities as strings (``json_number``); an
    array (written by orjson as it is) when every value is finite."""
    if np.isfinite(values).all():
        return values
    return [json_number(v) for v in values.tolist()]


def json_list(values: Floats) -> list[float | str]:
    found = json_numbers(values)
    return found.tolist() if isinstance(found, np.ndarray) else found


def finite_or_none(values: Floats) -> list[float | None]:
    return [None if math.isnan(v) else v for v in values.tolist()]


BUCKET_FIELDS = ("step_lo", "step_hi", "count", "min", "max", "last", "wall")


def answer_data(result: ColumnAnswer, layout: Layout) -> dict[str, Any]:
    p, b = result.points, result.buckets
    if layout == "columns":  # NaN minima and maxima are written as null by orjson
        return {"points": {"steps": p.steps, "walls": p.walls, "values": json_numbers(p.values)},
                "buckets": {"step_lo": b.step_lo, "step_hi": b.step_hi, "count": b.count,
                            "min": b.min, "max": b.max, "last": json_numbers(b.last),
                            "wall": b.wall}}
    return {"points": list(zip(p.steps.tolist(), p.walls.tolist(), json_list(p.values),
                               strict=True)),
            "buckets": [dict(zip(BUCKET_FIELDS, row, strict=True)) for row in zip(
                b.step_lo.tolist(), b.step_hi.tolist(), b.count.tolist(),
                finite_or_none(b.min), finite_or_none(b.max), json_list(b.last),
                b.wall.tolist(), strict=True)]}


def series_data(ref: mapping.SeriesRef, read: series_read.SeriesRead,
                layout: Layout = "rows") -> dict[str, Any]:
    """A ``models.SeriesData`` as plain data and arrays: no model object per bucket."""
    result = read.answer
    return {
        "member": ref.member, "source": ref.source, "run_path": ref.run_path, "tag": ref.tag,
        "step_min": read.lo, "step_max": read.hi, "wall_first": read.wall_first,
        "wall_time": read.wall_time,
        "reduced": result.reduced, "method": METHOD if result.reduced else None,
        "points_in_range": result.points_in_range, "points_returned": result.points_returned,
        **answer_data(result, layout)}


def json_response(data: dict[str, Any]) -> Response:
    """Serialised by orjson, without re-validation: the shapes are the declared models'
    (numpy arrays as JSON arrays)."""
    return Response(orjson.dumps(data, option=orjson.OPT_SERIALIZE_NUMPY),
                    media_type="application/json")


def series_refs(items: tuple[mapping.SeriesRef, ...]) -> list[models.SeriesRef]:
    return [models.SeriesRef(member=r.member, source=r.source, run_path=r.run_path, tag=r.tag)
            for r in items]


async def canonical_series(pool: asyncpg.Pool, web: WebState, member: MemberKey,
                           ref: mapping.SeriesRef, lo: int | None, hi: int | None,
                           max_points: int, layout: Layout = "rows") -> dict[str, Any]:
    """One series' answer as TensorBoard draws it (restarts and out-of-order steps purge
    what they orphan; see ``purge``), on a connection of its own so a chart's series are
    read side by side; a series not stored answers empty."""
    key = SeriesKey(member, ref.source, ref.run_path, ref.tag)
    async with pool.acquire() as conn:
        read = await answers.read(conn, web.answers, key, lo, hi, max_points,
                                  web.settings.unpack_budget, purge=True)
    if read is None:
        read = series_read.SeriesRead(series_read.NOTHING, lo or 0, hi or 0, 0, None)
    return {**series_data(ref, read, layout), "semantics": SEMANTICS,
            "points_purged": read.purged}


async def chart_series(pool: asyncpg.Pool, web: WebState, run_id: str, attempt: int,
                       refs: Sequence[mapping.SeriesRef], lo: int | None, hi: int | None,
                       max_points: int, layout: Layout) -> list[dict[str, Any]]:
    """One chart's series answers, read half the pool at once: the pool hands connections
    out in turn, so 100 series would queue 100 reads ahead of every later request."""
    return await side_by_side([
        functools.partial(canonical_series, pool, web, MemberKey(run_id, attempt, ref.member),
                          ref, lo, hi, max_points, layout)
        for ref in refs], max(1, web.settings.pool_size // 2))


Semantics = Annotated[Literal["raw", "tensorboard"], Query(
    description="raw: every stored point; tensorboard: TensorBoard's purge applied (see "
                "the canonical curves), the answer says so and counts what it dropped")]


def router(*, max_points_cap: int, max_series_cap: int) -> APIRouter:
    api = APIRouter(prefix="/api/v1")
    MaxPoints = Annotated[int, Query(ge=2, le=max_points_cap,
                                     description="points or buckets per series at most")]
    MaxSeries = Annotated[int, Query(ge=1, le=max_series_cap)]

    @api.get("/runs/{run_id}/attempts/{attempt}/series", response_model=list[models.Series])
    async def series(_: Viewer, pool: Pool, run_id: str, attempt: AttemptNo,
                     member: str | None = None, source: str | None = None,
                     limit: Annotated[int, Query(ge=1, le=1000)] = 500) -> list[dict[str, Any]]:
        async with pool.acquire() as conn:
            return await listings.series(conn, run_id, attempt, member=member, source=source,
                                         limit=limit)

    @api.get("/runs/{run_id}/attempts/{attempt}/scalars",
             response_model=models.CanonicalSeriesData | models.SeriesData)
    async def scalars(_: Viewer, web: State, run_id: str, attempt: AttemptNo,
                      member: str, source: str, tag: str, run_path: RunPath = "",
                      step_min: Step = None, step_max: Step = None,
                      max_points: MaxPoints = 2000, semantics: Semantics = "raw",
                      format: Format = "rows") -> Response:
        """Scalars of one source's tag (of one TensorBoard run) for one member: every stored
        point (the inspector's view), or with ``semantics=tensorboard`` what TensorBoard
        serves, as a canonical curve does, mapped or not."""
        key = SeriesKey(MemberKey(run_id, attempt, member), source, run_path, tag)
        async with web.pool.acquire() as conn:
            read = await answers.read(conn, web.answers, key, step_min, step_max, max_points,
                                      web.settings.unpack_budget, purge=semantics == SEMANTICS)
        if read is None:
            run = f" of run path {run_path!r}" if run_path else ""
            raise HTTPException(404, f"no series {member}/{source}/{tag}{run} in run "
                                     f"{run_id!r} attempt {attempt}")
        if read.body and format == "columns":  # a kept answer's, as it was given
            return Response(read.body[0], media_type="application/json")
        data = series_data(mapping.SeriesRef(member, source, run_path, tag), read, format)
        if semantics == SEMANTICS:
            data |= {"semantics": SEMANTICS, "points_purged": read.purged}
        answer = json_response(data)
        if format == "columns" and read.version is not None:  # (kept only if the read is)
            read.body[:] = [bytes(answer.body)]
        return answer

    @api.get("/runs/{run_id}/attempts/{attempt}/canonical",
             response_model=models.CanonicalIndex)
    async def canonical_index(_: Viewer, pool: Pool, run_id: str,
                              attempt: AttemptNo) -> models.CanonicalIndex:
        async with pool.acquire() as conn:
            frozen = await mapping.frozen_mapping(conn, run_id, attempt)
            resolution = await mapping.canonical(conn, run_id, attempt)
        return models.CanonicalIndex(
            mapping_frozen=frozen is not None,
            curves=[{"name": c.name, "goal": c.goal, "unit": c.unit, "aggregate": c.aggregate}
                    for c in resolution.curves],
            unmapped=series_refs(resolution.unmapped),
            not_owner=series_refs(resolution.not_owner))

    @api.get("/runs/{run_id}/attempts/{attempt}/curves/{name}",
             response_model=models.CanonicalCurve)
    async def curve(_: Viewer, pool: Pool, web: State, run_id: str, attempt: AttemptNo,
                    name: str, step_min: Step = None, step_max: Step = None,
                    max_points: MaxPoints = 2000, max_series: MaxSeries = 20,
                    format: Format = "rows") -> Response:
        """A canonical curve through the attempt's frozen mapping: one series per member,
        with TensorBoard's semantics (restarts purge what they orphan; see ``purge``)."""
        async with pool.acquire() as conn:  # the series of the curve's mappings' tags alone
            frozen = await mapping.frozen_mapping(conn, run_id, attempt) or []
            resolution = await mapping.canonical(
                conn, run_id, attempt, tags=[m.tag for m in frozen if m.name == name])
        found = [c for c in resolution.curves if c.name == name]
        if not found:
            raise HTTPException(404, f"no canonical curve {name!r} in run {run_id!r} attempt "
                                     f"{attempt} (is its mapping frozen?)")
        chosen = found[0]
        data = await chart_series(pool, web, run_id, attempt, chosen.series[:max_series],
                                  step_min, step_max, max_points, format)
        return json_response({"name": chosen.name, "goal": chosen.goal, "unit": chosen.unit,
                              "aggregate": chosen.aggregate, "series": data,
                              "series_total": len(chosen.series)})

    @api.get("/runs/{run_id}/attempts/{attempt}/tag", response_model=models.TagCurve)
    async def tag_curve(_: Viewer, pool: Pool, web: State, run_id: str, attempt: AttemptNo,
                        tag: str, step_min: Step = None, step_max: Step = None,
                        max_points: MaxPoints = 2000, max_series: MaxSeries = 20,
                        format: Format = "rows") -> Response:
        """Every series of one tag in the attempt (each member's, source's and TensorBoard
        run's), with TensorBoard's semantics: the chart TensorBoard draws for a tag, one
        line per run. For series no mapping gives a meaning; 404 for a tag no series has."""
        async with pool.acquire() as conn:  # the first max_series, and how many in all
            rows = await listings.tag_series(conn, run_id, attempt, tag, max_series)
        if not rows:
            raise HTTPException(404, f"no series with tag {tag!r} in run {run_id!r} attempt "
                                     f"{attempt}")
        data = await chart_series(
            pool, web, run_id, attempt,
            [mapping.SeriesRef(r["member"], r["source"], r["run_path"], tag) for r in rows],
            step_min, step_max, max_points, format)
        return json_response({"name": tag, "series": data, "series_total": rows[0]["total"]})

    return api
