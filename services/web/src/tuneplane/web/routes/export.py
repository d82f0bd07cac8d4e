"""One series' stored points as a file: CSV (``step,wall_time,value``), JSON Lines or an
Arrow IPC stream (the same three columns, int64 and float64: what ``tuneplane-client``
reads, with nothing to parse), every point the series holds in the step range, in the
order they were read (``read.export``).
The answer is bounded: at most ``MAX_POINTS`` points, and when the range holds more, the
answer ends before a step (every point of a step is in one answer) and its ``Link`` header
names the rest (``rel="next"``, from that step on). Non-finite values are written ``NaN``,
``Infinity`` and ``-Infinity`` (in JSON Lines as strings: JSON has no such numbers); Arrow
holds them as they are.
"""

from __future__ import annotations

import asyncio
import math
from typing import Annotated, Any, Final, Literal
from urllib.parse import quote, urlencode

import numpy as np
import orjson
import pyarrow as pa
from fastapi import APIRouter, HTTPException, Query, Response

from tuneplane.telemetry.v1.identity import MemberKey, SeriesKey
from tuneplane.web.auth.access import Viewer
from tuneplane.web.dependencies import Pool
from tuneplane.web.read import export as export_read
from tuneplane.web.read.columnar import Points
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


def values_written(points: Points) -> list[float | str]:
    """The values, each non-finite one as its name (a float's ``str`` is its ``repr``)."""
    values: list[float] = points.values.tolist()
    if bool(np.isfinite(points.values).all()):
        return list(values)
    return [v if math.isfinite(v) else written(v) for v in values]


def as_csv(points: Points) -> bytes:
    rows = map("{},{},{}".format, points.steps.tolist(), points.walls.tolist(),
               values_written(points))
    return "\n".join(["step,wall_time,value", *rows, ""]).encode()


def as_jsonl(points: Points) -> bytes:
    return b"".join(orjson.dumps({"step": step, "wall_time": wall, "value": value}) + b"\n"
                    for step, wall, value in zip(points.steps.tolist(), points.walls.tolist(),
                                                 values_written(points), strict=True))


SCHEMA: Final = pa.schema([("step", pa.int64()), ("wall_time", pa.float64()),
                           ("value", pa.float64())])


def as_arrow(points: Points) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, SCHEMA) as stream:
        stream.write_batch(pa.record_batch(
            [pa.array(points.steps), pa.array(points.walls), pa.array(points.values)],
            schema=SCHEMA))
    return bytes(sink.getvalue())


def attachment(name: str) -> str:
    """A download's Content-Disposition (RFC 6266): an ASCII fallback name (anything else,
    quotes and separators as "_") and the name itself, UTF-8 (RFC 8187); a header is Latin-1,
    and a tag may be any printable text."""
    plain = "".join(c if c.isascii() and c.isprintable() and c not in '"\\/;' else "_"
                    for c in name)
    return f"attachment; filename=\"{plain}\"; filename*=UTF-8''{quote(name, safe='')}"


FORMATS: Final = {"csv": (as_csv, "text/csv"), "jsonl": (as_jsonl, "application/x-ndjson"),
                  "arrow": (as_arrow, "application/vnd.apache.arrow.stream")}


@router.get("/runs/{run_id}/attempts/{attempt}/scalars/export",
            response_class=Response,
            responses={200: {"content": {media: {} for _, media in FORMATS.values()}}})
async def export(_: Viewer, pool: Pool, run_id: str, attempt: AttemptNo, member: str,
                 source: str, tag: str, run_path: RunPath = "", step_min: Step = None,
                 step_max: Step = None,
                 format: Annotated[Literal["csv", "jsonl", "arrow"], Query()] = "csv"
                 ) -> Response:
    """Every stored point of one series in the step range, as a file."""
    lo = FIRST if step_min is None else step_min
    hi = LAST if step_max is None else step_max
    key = SeriesKey(MemberKey(run_id, attempt, member), source, run_path, tag)
    async with pool.acquire() as conn:
        try:
            found = await export_read.points(conn, key, lo, hi, MAX_POINTS)
        except export_read.NoStepToCut as refused:
            raise HTTPException(422, f"{refused} (a job restarted many times from one "
                                     "step); export from a later step, or look at them in "
                                     "the inspector") from None
    if found is None:
        raise HTTPException(404, f"no series {member}/{source}/{tag} in run {run_id!r} "
                                 f"attempt {attempt}")
    points, rest = found.points, found.rest
    encode, media = FORMATS[format]
    body = await asyncio.to_thread(encode, points)  # up to a second: off the event loop
    headers: dict[str, Any] = {"Content-Disposition": attachment(
        f"{run_id}-{attempt}-{member}-{tag}.{format}")}
    if rest is not None:
        query = urlencode({"member": member, "source": source, "tag": tag,
                           "run_path": run_path, "step_min": rest, "step_max": hi,
                           "format": format})
        path = f"/api/v1/runs/{quote(run_id, safe='')}/attempts/{attempt}/scalars/export"
        headers["Link"] = f'<{path}?{query}>; rel="next"'
    return Response(body, media_type=media, headers=headers)
