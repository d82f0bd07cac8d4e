"""One series' stored points as a file: CSV (``step,wall_time,value``) or JSON Lines, every
point the series holds in the step range, in the order they were read (``read.export``).
The answer is bounded: at most ``MAX_POINTS`` points, and when the range holds more, the
answer ends at a chunk's edge and its ``Link`` header names the rest
(``rel="next"``, from the next step on). Non-finite values are written ``NaN``,
``Infinity`` and ``-Infinity`` (in JSON Lines as strings: JSON has no such numbers).
"""

from __future__ import annotations

import csv
import io
import math
from typing import Annotated, Any, Final, Literal
from urllib.parse import urlencode

import orjson
from fastapi import APIRouter, HTTPException, Query, Response

from tuneplane.telemetry.v1.identity import MemberKey, SeriesKey
from tuneplane.web.auth.access import Viewer
from tuneplane.web.dependencies import Pool
from tuneplane.web.read import export as export_read
from tuneplane.web.routes.params import AttemptNo, RunPath, Step

MAX_POINTS: Final = 1_000_000
FIRST, LAST = -(2**63), 2**63 - 1

router = APIRouter(prefix="/api/v1", tags=["series"])

def written(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return repr(value)


def as_csv(points: list[tuple[int, float, float]]) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(("step", "wall_time", "value"))
    writer.writerows((step, repr(wall), written(value)) for step, wall, value in points)
    return out.getvalue().encode()


def as_jsonl(points: list[tuple[int, float, float]]) -> bytes:
    return b"".join(orjson.dumps({"step": step, "wall_time": wall,
                                  "value": value if math.isfinite(value) else written(value)})
                    + b"\n" for step, wall, value in points)


@router.get("/runs/{run_id}/attempts/{attempt}/scalars/export",
            response_class=Response,
            responses={200: {"content": {"text/csv": {}, "application/x-ndjson": {}}}})
async def export(_: Viewer, pool: Pool, run_id: str, attempt: AttemptNo, member: str,
                 source: str, tag: str, run_path: RunPath = "", step_min: Step = None,
                 step_max: Step = None,
                 format: Annotated[Literal["csv", "jsonl"], Query()] = "csv") -> Response:
    """Every stored point of one series in the step range, as a file."""
    lo = FIRST if step_min is None else step_min
    hi = LAST if step_max is None else step_max
    key = SeriesKey(MemberKey(run_id, attempt, member), source, run_path, tag)
    async with pool.acquire() as conn:
        try:
            found = await export_read.points(conn, key, lo, hi, MAX_POINTS)
        except export_read.NoStepToCut:
            raise HTTPException(422, f"more than {MAX_POINTS} points start at step {lo} "
                                     "(a job restarted many times from one step); export "
                                     "from a later step, or look at them in the inspector"
                                ) from None
    if found is None:
        raise HTTPException(404, f"no series {member}/{source}/{tag} in run {run_id!r} "
                                 f"attempt {attempt}")
    points, rest = found.points, found.rest
    body, media = (as_csv(points), "text/csv") if format == "csv" else (
        as_jsonl(points), "application/x-ndjson")
    name = f"{run_id}-{attempt}-{member}-{tag}".replace("/", "_")
    headers: dict[str, Any] = {
        "Content-Disposition": f'attachment; filename="{name}.{format}"'}
    if rest is not None:
        query = urlencode({"member": member, "source": source, "tag": tag,
                           "run_path": run_path, "step_min": rest, "step_max": hi,
                           "format": format})
        headers["Link"] = (f'</api/v1/runs/{run_id}/attempts/{attempt}/scalars/export?{query}>;'
                           ' rel="next"')
    return Response(body, media_type=media, headers=headers)
