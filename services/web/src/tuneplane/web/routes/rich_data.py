"""Histograms and text of a tag, decoded on the server from the TensorBoard records the
object store keeps (``summaries``), so the Media page draws numbers and shows strings and
never parses a tenant's protobufs itself.

An answer is bounded: at most ``limit`` records, spread evenly over the tag's steps (the
first and last included), each one object read, a few at a time, and at most ``BUDGET``
bytes of them read and decoded (a writer's record may be megabytes: the smallest are taken
first, the rest left out and named). A tag of another kind is refused (422, naming the tag
and what it holds); a record that cannot be read is left out and named in the answer's
``problems``, so one bad record does not hide the others: one whose object is gone from the
store as well. The store not answering fails the answer (503), the reads still waiting
never started. Decoding runs in a worker thread, off the event loop that answers every
other request.
"""

import asyncio
import functools
from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query

from tuneplane.web import models
from tuneplane.web.auth.access import Viewer
from tuneplane.web.dependencies import Objects, Pool
from tuneplane.web.read import summaries
from tuneplane.web.read.bucket import Bucket, ObjectMissing
from tuneplane.web.read.side_by_side import side_by_side
from tuneplane.web.routes.params import AttemptNo, RunPath
from tuneplane.web.routes.rich import described, sampled

router = APIRouter(prefix="/api/v1")

#: Objects read side by side for one answer.
READS = 8
#: Stored bytes one answer reads and decodes at most. A record may be a few MB (as much as
#: a batch holds) and decodes to several times that (buckets as Python tuples, strings as
#: JSON); 200 of them would be gigabytes for one request.
BUDGET = 4 * 2**20

Limit = Annotated[int, Query(ge=2, le=200, description="records at most, spread evenly over "
                                                       "the tag's steps")]


async def decoded(pool: Pool, bucket: Bucket | None, run_id: str, attempt: int, member: str,
                  source: str, run_path: str, tag: str, limit: int, kind: str,
                  decode: Callable[[bytes], Any]) -> tuple[dict[str, Any], list[Any]]:
    """The answer's head (with ``problems``) and, per record decoded, (row, decoded)."""
    rows = await sampled(pool, run_id, attempt, member, source, run_path, tag, limit)
    found = {row["kind"] for row in rows}
    if found != {kind}:
        raise HTTPException(422, f"{described(member, source, run_path, tag)} in run "
                                 f"{run_id!r} attempt {attempt} holds {', '.join(sorted(found))}"
                                 f" records, not {kind} records")
    if bucket is None:
        raise HTTPException(503, "no object store configured (TUNEPLANE_S3_ENDPOINT)")

    async def read(key: str) -> bytes | ObjectMissing:
        try:
            return await bucket.read(key)
        except ObjectMissing as missing:
            return missing

    chosen = within_budget(rows)
    payloads = await side_by_side(
        [functools.partial(read, row["object_key"]) for row in chosen], READS)

    def decode_all() -> tuple[list[str], list[Any]]:
        problems: list[str] = []
        done: list[Any] = []
        payload_of = dict(zip((id(row) for row in chosen), payloads, strict=True))
        for row in rows:
            where = f"step {row['step']} ({row['file']}@{row['file_offset']})"
            if id(row) not in payload_of:
                problems.append(f"{where}: the record is {row['bytes']} bytes, left out: an "
                                f"answer decodes at most {BUDGET} bytes of records")
                continue
            payload = payload_of[id(row)]
            if isinstance(payload, ObjectMissing):
                problems.append(f"{where}: the record is missing: {payload}")
                continue
            try:
                done.append((row, decode(payload)))
            except summaries.Undecodable as exc:
                problems.append(f"{where}: the record {exc}")
        return problems, done

    problems, done = await asyncio.to_thread(decode_all)
    head = {"member": member, "source": source, "run_path": run_path, "tag": tag,
            "records": rows[0]["records"], "problems": problems}
    return head, done


def within_budget(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows an answer reads: the smallest first, while their bytes fit ``BUDGET``."""
    chosen, spent = [], 0
    for row in sorted(rows, key=lambda r: r["bytes"]):
        if spent + row["bytes"] > BUDGET:
            break
        chosen.append(row)
        spent += row["bytes"]
    return chosen


@router.get("/runs/{run_id}/attempts/{attempt}/rich/histograms",
            response_model=models.HistogramSeries)
async def histograms(_: Viewer, pool: Pool, bucket: Objects, run_id: str, attempt: AttemptNo,
                     member: str, source: str, tag: str, run_path: RunPath = "",
                     limit: Limit = 50) -> dict[str, Any]:
    """A histogram tag's buckets per step: what TensorBoard's histograms dashboard draws."""
    head, done = await decoded(pool, bucket, run_id, attempt, member, source, run_path, tag,
                               limit, "histogram", summaries.histogram)
    return {**head, "histograms": [{"step": row["step"], "wall_time": row["wall_time"],
                                    "buckets": buckets} for row, buckets in done]}


@router.get("/runs/{run_id}/attempts/{attempt}/rich/text", response_model=models.TextSeries)
async def text(_: Viewer, pool: Pool, bucket: Objects, run_id: str, attempt: AttemptNo,
               member: str, source: str, tag: str, run_path: RunPath = "",
               limit: Annotated[int, Query(ge=2, le=100)] = 50) -> dict[str, Any]:
    """A text tag's strings per step (as text: the page never renders them as markup)."""
    head, done = await decoded(pool, bucket, run_id, attempt, member, source, run_path, tag,
                               limit, "text", summaries.text)
    return {**head, "texts": [{"step": row["step"], "wall_time": row["wall_time"],
                               "shape": shape, "strings": strings}
                              for row, (shape, strings) in done]}
