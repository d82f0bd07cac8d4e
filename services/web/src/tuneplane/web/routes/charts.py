"""The Charts grid's index over HTTP: an attempt's sections of charts with their counts,
and one section's charts a page at a time, both filtered by a regular expression in
PostgreSQL (``read.chart_index``), so that the page asks only for what it shows. Reading
needs a viewer of the run's project; a parameter the index cannot take answers 422 naming
it."""

from typing import Annotated

from fastapi import APIRouter, HTTPException, Query

from tuneplane.controlplane import mapping
from tuneplane.telemetry.v1.limits import MAX_NAME_BYTES
from tuneplane.web import models
from tuneplane.web.auth.access import Viewer
from tuneplane.web.dependencies import Pool
from tuneplane.web.read import chart_index
from tuneplane.web.read.chart_index import ChartKey, IndexQueryError
from tuneplane.web.routes.params import AttemptNo

router = APIRouter(prefix="/api/v1")

Filter = Annotated[str | None, Query(
    max_length=512, description="charts whose name matches this regular expression, "
                                "case-insensitively (PostgreSQL's ~*: POSIX advanced "
                                "expressions, as JavaScript's for ^ $ | () [] . * + ? \\d); "
                                "none or '': every chart")]


def entry(chart: ChartKey) -> models.ChartEntry:
    return models.ChartEntry(kind=chart.kind, name=chart.name, key=str(chart))


def pattern_of(text: str | None) -> str | None:
    return text or None  # an empty filter keeps every chart, as the page's empty box


@router.get("/runs/{run_id}/attempts/{attempt}/charts/sections",
            response_model=models.ChartSections)
async def chart_sections(
        _: Viewer, pool: Pool, run_id: str, attempt: AttemptNo, filter: Filter = None,
        after: Annotated[str | None, Query(max_length=MAX_NAME_BYTES,
                                           description="the sections after this one (a "
                                                       "page's next)")] = None,
        limit: Annotated[int, Query(ge=1, le=1000)] = 200,
        whole: Annotated[int, Query(ge=0, le=500, description="when the filter keeps at most "
                                                              "this many charts, each section "
                                                              "comes with them (entries)")] = 0,
        ) -> models.ChartSections:
    """The attempt's sections of charts (name prefixes before the first '/', as TensorBoard
    groups tags) with charts the filter keeps, each with its counts, by name ('' last); a
    small index (``whole``) with its charts too, in one answer."""
    async with pool.acquire() as conn:
        frozen = await mapping.frozen_mapping(conn, run_id, attempt)
        try:
            found = await chart_index.sections(conn, run_id, attempt,
                                               chart_index.Mappings.of(frozen),
                                               pattern=pattern_of(filter), after=after,
                                               limit=limit, whole=whole)
        except IndexQueryError as exc:
            raise HTTPException(422, str(exc)) from None
    return models.ChartSections(
        mapping_frozen=frozen is not None,
        sections=[models.ChartSection(
            name=s["name"], charts=s["charts"], total=s["total"],
            entries=None if "entries" not in s else [entry(c) for c in s["entries"]])
            for s in found.sections],
        charts=found.charts, total=found.total, next=found.next)


@router.get("/runs/{run_id}/attempts/{attempt}/charts", response_model=models.ChartPage)
async def charts(
        _: Viewer, pool: Pool, run_id: str, attempt: AttemptNo,
        section: Annotated[str, Query(max_length=MAX_NAME_BYTES,
                                      description="the section ('' for names without a "
                                                  "prefix)")],
        filter: Filter = None,
        after: Annotated[str | None, Query(max_length=MAX_NAME_BYTES + len("curve:"),
                                           description="the charts after this key (a "
                                                       "page's next)")] = None,
        limit: Annotated[int, Query(ge=1, le=500)] = 100) -> models.ChartPage:
    """One section's charts the filter keeps, a page at a time: the canonical curves of the
    frozen mapping in its order, then each tag some series of no mapping has, by name."""
    async with pool.acquire() as conn:
        frozen = await mapping.frozen_mapping(conn, run_id, attempt)
        try:
            found = await chart_index.page(
                conn, run_id, attempt, chart_index.Mappings.of(frozen), section=section,
                pattern=pattern_of(filter), after=None if after is None else ChartKey.parse(after),
                limit=limit)
        except IndexQueryError as exc:
            raise HTTPException(422, str(exc)) from None
    return models.ChartPage(
        charts=[entry(c) for c in found.charts],
        next=None if found.next is None else str(found.next))
