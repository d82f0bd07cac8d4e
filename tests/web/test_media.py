"""The Media page's API over the real pipeline: a tensorboardX log directory (images in two
TensorBoard runs, histograms, text, audio) through collector → ingest → Kafka → projector
→ PostgreSQL and S3, then listed with run paths, sampled, decoded as TensorBoard's loader
reads the same files, and served typed by magic bytes only; a disguised payload is an
attachment, another project's object 404, bad input a clear refusal."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path

import asyncpg
import httpx
import pytest

from tests.support.environment import Endpoints
from tests.support.kafka import produce
from tests.support.media import (
    AUDIO_STEPS,
    EVAL_IMAGE_STEPS,
    HISTOGRAM_STEPS,
    HOSTILE,
    IMAGE_STEPS,
    TEXT_STEPS,
    collect_media,
    tensorboard_tensors,
    write_media_logdir,
)
from tests.support.processes import Process
from tests.support.truth import member_batch
from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1.identity import MemberKey
from tuneplane.tensorboard.v1 import event_pb2 as tb
from tuneplane.web.routes.rich_data import BUDGET

SVG = b'<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"><script>alert(2)</script></svg>'
HTML = b"<!doctype html><script>alert(3)</script>"
TAG = {"member": "rank-0", "source": "tb"}


@pytest.fixture(scope="module")
async def media(initialised: Endpoints, ingest: Process, projector: Process, tls_dir: Path,
                tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """A run (default project) whose rank-0 collected the media log directory."""
    run_id, tmp = f"media-{uuid.uuid4().hex[:10]}", tmp_path_factory.mktemp("media")
    write_media_logdir(tmp / "logs")
    db = await asyncpg.connect(initialised.database_url)
    try:
        await collect_media(initialised, ingest, tls_dir, tmp, db,
                            MemberKey(run_id, 1, "rank-0"), tmp / "logs")
    finally:
        await db.close()
    return run_id, tmp / "logs"


async def project(db: asyncpg.Connection, batches: list[pb.Batch], bootstrap: str) -> None:
    """Put batches on the topic and wait until the projector stored their rich records."""
    await produce(bootstrap, batches)
    run_id, wanted = batches[0].identity.run_id, sum(len(b.rich) for b in batches)
    deadline = time.monotonic() + 60
    while await db.fetchval("SELECT count(*) FROM rich_records WHERE run_id = $1",
                            run_id) < wanted:
        assert time.monotonic() < deadline, "the batches were not projected"
        await asyncio.sleep(0.1)


def image_record(tag: str, step: int, encoded: bytes) -> pb.RichRecord:
    value = tb.Summary.Value(tag=tag, image=tb.Summary.Image(height=1, width=1, colorspace=3,
                                                             encoded_image_string=encoded))
    return pb.RichRecord(source="tb", tag=tag, step=step, wall_time=1.0,
                         kind=pb.RichRecord.KIND_IMAGE, payload=value.SerializeToString(),
                         file="events.out.tfevents.1", offset=step)


async def test_rich_records_carry_their_tensorboard_run_path(
        client: httpx.AsyncClient, media: tuple[str, Path]) -> None:
    url = f"/api/v1/runs/{media[0]}/attempts/1/rich"
    listed = (await client.get(url, params={"tag": "samples/digit", "limit": 100})).json()
    assert sorted((r["run_path"], r["step"]) for r in listed) == sorted(
        [("", s) for s in IMAGE_STEPS] + [("eval", s) for s in EVAL_IMAGE_STEPS])
    assert {r["file"].rsplit("/", 1)[0] for r in listed if r["run_path"]} == {"eval"}
    only_eval = (await client.get(url, params={"tag": "samples/digit", "run_path": "eval"}))
    assert [r["step"] for r in only_eval.json()] == EVAL_IMAGE_STEPS
    tags = (await client.get(f"{url}/tags")).json()
    assert [(t["run_path"], t["tag"], t["kind"], t["records"], t["step_min"], t["step_max"])
            for t in tags] == [
        ("", "notes/text_summary", "text", 3, 0, 9),
        ("", "samples/digit", "image", 6, 0, 50),
        ("", "voice", "audio", 2, 0, 1),
        ("", "weights/layer1", "histogram", 12, 0, 110),
        ("eval", "samples/digit", "image", 2, 25, 50)]
    assert [t["tag"] for t in (await client.get(f"{url}/tags", params={"kind": "audio"})).json()
            ] == ["voice"]


async def test_a_tags_records_are_sampled_evenly_the_first_and_last_kept(
        client: httpx.AsyncClient, media: tuple[str, Path]) -> None:
    url = f"/api/v1/runs/{media[0]}/attempts/1/rich/steps"
    query = {**TAG, "tag": "weights/layer1"}
    five = (await client.get(url, params={**query, "limit": 5})).json()
    assert five["records"] == len(HISTOGRAM_STEPS)
    assert [r["step"] for r in five["steps"]] == [0, 20, 50, 80, 110]  # floor(k * 11 / 4)
    every = (await client.get(url, params=query)).json()
    assert [r["step"] for r in every["steps"]] == HISTOGRAM_STEPS
    evaluation = (await client.get(url, params={**TAG, "tag": "samples/digit",
                                                "run_path": "eval"})).json()
    assert [(r["run_path"], r["step"]) for r in evaluation["steps"]] == [
        ("eval", s) for s in EVAL_IMAGE_STEPS]


async def test_histograms_are_decoded_as_tensorboard_reads_them(
        client: httpx.AsyncClient, media: tuple[str, Path]) -> None:
    run_id, logdir = media
    answer = (await client.get(f"/api/v1/runs/{run_id}/attempts/1/rich/histograms",
                               params={**TAG, "tag": "weights/layer1"})).json()
    truth = tensorboard_tensors(logdir, "weights/layer1")
    assert answer["problems"] == []
    assert [h["step"] for h in answer["histograms"]] == [step for step, _ in truth]
    for served, (_, tensor) in zip(answer["histograms"], truth, strict=True):
        assert len(served["buckets"]) == len(tensor) > 10
        for bucket, row in zip(served["buckets"], tensor.tolist(), strict=True):
            assert bucket == pytest.approx(row, rel=1e-6)  # TensorBoard keeps float32
    bounded = (await client.get(f"/api/v1/runs/{run_id}/attempts/1/rich/histograms",
                                params={**TAG, "tag": "weights/layer1", "limit": 3})).json()
    assert [h["step"] for h in bounded["histograms"]] == [0, 50, 110]
    assert bounded["records"] == len(HISTOGRAM_STEPS)


async def test_text_is_served_as_the_strings_written(client: httpx.AsyncClient,
                                                     media: tuple[str, Path]) -> None:
    answer = (await client.get(f"/api/v1/runs/{media[0]}/attempts/1/rich/text",
                               params={**TAG, "tag": "notes/text_summary"})).json()
    assert [(t["step"], t["shape"], t["strings"]) for t in answer["texts"]] == [
        (step, [1], [f"{HOSTILE} step {step}"]) for step in TEXT_STEPS]


async def test_images_and_audio_are_served_as_their_bytes_say(
        client: httpx.AsyncClient, media: tuple[str, Path]) -> None:
    base = f"/api/v1/runs/{media[0]}/attempts/1/rich/steps"
    images = (await client.get(base, params={**TAG, "tag": "samples/digit"})).json()["steps"]
    shown = [await client.get(f"/api/v1/media/{r['object_key']}") for r in images]
    assert {(r.status_code, r.headers["content-type"], r.headers["x-content-type-options"])
            for r in shown} == {(200, "image/png", "nosniff")}
    assert all(r.content.startswith(b"\x89PNG\r\n\x1a\n") for r in shown)
    assert len({r.content for r in shown}) == len(IMAGE_STEPS)  # a picture per step
    clips = (await client.get(base, params={**TAG, "tag": "voice"})).json()["steps"]
    assert len(clips) == len(AUDIO_STEPS)
    played = await client.get(f"/api/v1/media/{clips[0]['object_key']}")
    assert played.headers["content-type"] == "audio/wav"
    assert played.content[:4] == b"RIFF"
    stored = await client.get(f"/api/v1/rich/{images[0]['object_key']}")
    assert stored.status_code == 200  # the Summary.Value as kept: not an image, an attachment
    assert stored.headers["content-type"] == "application/octet-stream"
    assert stored.headers["content-disposition"] == "attachment"
    assert stored.headers["x-content-type-options"] == "nosniff"


async def test_bad_input_is_refused_naming_what_and_where(client: httpx.AsyncClient,
                                                          media: tuple[str, Path]) -> None:
    run_id = media[0]
    url = f"/api/v1/runs/{run_id}/attempts/1/rich"
    wrong = await client.get(f"{url}/histograms", params={**TAG, "tag": "samples/digit"})
    assert wrong.status_code == 422
    assert wrong.json()["detail"] == (f"rank-0/tb/samples/digit in run {run_id!r} attempt 1 "
                                      "holds image records, not histogram records")
    absent = await client.get(f"{url}/text", params={**TAG, "tag": "notes",
                                                     "run_path": "eval"})
    assert absent.status_code == 404
    assert absent.json()["detail"] == (f"no rich records of rank-0/tb/notes of run path "
                                       f"'eval' in run {run_id!r} attempt 1")
    too_few = await client.get(f"{url}/histograms",
                               params={**TAG, "tag": "weights/layer1", "limit": 1})
    assert too_few.status_code == 422
    histogram = (await client.get(f"{url}/steps", params={**TAG, "tag": "weights/layer1",
                                                          "limit": 2})).json()["steps"][0]
    not_media = await client.get(f"/api/v1/media/{histogram['object_key']}")
    assert not_media.status_code == 422
    assert not_media.json()["detail"] == (f"rich record {histogram['object_key']!r} holds a "
                                          "histo value, not an image or audio clip")


async def test_a_disguised_svg_or_html_is_served_as_an_attachment(
        client: httpx.AsyncClient, initialised: Endpoints, projector: Process,
        db: asyncpg.Connection, run_id: str) -> None:
    batch = member_batch(MemberKey(run_id, 1, "rank-0"), 1, 2)
    batch.rich.extend([image_record("evil.png", 1, SVG), image_record("page.png", 2, HTML)])
    batch.rich.add(source="tb", tag="raw.png", step=3, wall_time=1.0, payload=SVG,
                   kind=pb.RichRecord.KIND_IMAGE, file="x.png", offset=0)
    await project(db, [batch], initialised.kafka_bootstrap)
    records = (await client.get(f"/api/v1/runs/{run_id}/attempts/1/rich")).json()
    assert [r["tag"] for r in records] == ["evil.png", "page.png", "raw.png"]
    answers = [await client.get(f"/api/v1/media/{r['object_key']}") for r in records[:2]]
    answers.append(await client.get(f"/api/v1/rich/{records[2]['object_key']}"))
    for answer, payload in zip(answers, [SVG, HTML, SVG], strict=True):
        assert answer.status_code == 200
        assert answer.headers["content-type"] == "application/octet-stream"
        assert answer.headers["content-disposition"] == "attachment"
        assert answer.headers["x-content-type-options"] == "nosniff"
        assert answer.content == payload


async def test_another_projects_objects_are_404(
        client: httpx.AsyncClient, admin: httpx.AsyncClient, initialised: Endpoints,
        projector: Process, db: asyncpg.Connection, run_id: str) -> None:
    other = f"other-{uuid.uuid4().hex[:8]}"
    await db.execute("INSERT INTO projects (project) VALUES ($1)", other)
    artifact = {"version": 1, "sources": [{"id": "tb", "kind": "jsonl", "path": "m.jsonl",
                                           "owner": "rank-0"}]}
    made = await admin.post("/api/v1/runs", json={"run_id": run_id, "project": other,
                                                   "integration": artifact})
    assert made.status_code == 201, made.text
    batch = member_batch(MemberKey(run_id, 1, "rank-0"), 1, 2)
    secret = b"\x89PNG\r\n\x1a\n" + uuid.uuid4().bytes  # no other run holds these bytes
    batch.rich.append(image_record("secret", 1, secret))
    await project(db, [batch], initialised.kafka_bootstrap)
    key = await db.fetchval("SELECT object_key FROM rich_records WHERE run_id = $1", run_id)
    for path in (f"/api/v1/media/{key}", f"/api/v1/rich/{key}"):
        refused = await client.get(path)
        assert refused.status_code == 404, path
        assert refused.json()["detail"] == f"no rich record stored as {key!r}"
        assert (await admin.get(path)).status_code == 200, path
    listing = await client.get(f"/api/v1/runs/{run_id}/attempts/1/rich/steps",
                               params={**TAG, "tag": "secret"})
    assert listing.status_code == 404
    shown = await admin.get(f"/api/v1/media/{key}")
    assert (shown.headers["content-type"], shown.content) == ("image/png", secret)


def rich_batch(member: MemberKey, sequence: int, records: list[pb.RichRecord]) -> pb.Batch:
    return pb.Batch(identity=pb.BatchIdentity(run_id=member.run_id, attempt=member.attempt,
                                              member=member.member, spool_epoch="e",
                                              sequence=sequence),
                    sealed_at=1.7e9 + sequence, rich=records)


def histogram_record(step: int, buckets: int) -> pb.RichRecord:
    """A TF1 histogram of ``buckets`` buckets (16 bytes each stored, some 60 as JSON)."""
    value = tb.Summary.Value(tag="weights", histo=tb.HistogramProto(
        min=0.0, max=float(buckets), num=buckets, bucket_limit=[float(i + 1) for i in
                                                                range(buckets)],
        bucket=[1.0] * buckets))
    return pb.RichRecord(source="tb", tag="weights", step=step, wall_time=1.0,
                         kind=pb.RichRecord.KIND_HISTOGRAM, payload=value.SerializeToString(),
                         plugin_name="histograms", file="events.out.tfevents.1", offset=step)


def text_record(step: int, size: int) -> pb.RichRecord:
    value = tb.Summary.Value(tag="notes", tensor=tb.TensorProto(
        dtype=tb.DataType.DT_STRING, tensor_shape=tb.TensorShapeProto(
            dim=[tb.TensorShapeProto.Dim(size=1)]), string_val=[b"\x01" * size]))
    return pb.RichRecord(source="tb", tag="notes", step=step, wall_time=1.0,
                         kind=pb.RichRecord.KIND_TEXT, payload=value.SerializeToString(),
                         plugin_name="text", file="events.out.tfevents.1", offset=step)


async def test_an_answer_decodes_a_bounded_number_of_bytes_the_largest_left_out(
        client: httpx.AsyncClient, initialised: Endpoints, projector: Process,
        db: asyncpg.Connection, run_id: str) -> None:
    """A writer's records may be a few MB each, and a histograms answer samples up to 200 of
    them: read, decoded and answered whole, one request held gigabytes (buckets as Python
    tuples, then JSON ten times the stored size). An answer reads at most a budget of
    bytes, smallest records first, and names each record it left out, so the few huge ones
    never hide the others."""
    member = MemberKey(run_id, 1, "rank-0")
    big = 3 * 2**20 // 16  # buckets of a 3 MB record, one to a batch (4 MB at most)
    batches = [rich_batch(member, 1, [histogram_record(s, 10) for s in range(0, 5)]
                          + [text_record(s, 100) for s in range(0, 5)])]
    batches += [rich_batch(member, 2 + i, [histogram_record(10 + i, big)]) for i in range(4)]
    batches += [rich_batch(member, 6 + i, [text_record(10 + i, 3 * 2**20)]) for i in range(4)]
    await project(db, batches, initialised.kafka_bootstrap)
    url = f"/api/v1/runs/{run_id}/attempts/1/rich"
    for kind, tag, field in (("histograms", "weights", "histograms"), ("text", "notes", "texts")):
        answer = await client.get(f"{url}/{kind}", params={**TAG, "tag": tag, "limit": 100})
        assert answer.status_code == 200, answer.text
        assert len(answer.content) < 7 * BUDGET, kind  # JSON: 6 bytes a control character
        data = answer.json()
        served = [entry["step"] for entry in data[field]]
        assert served[:5] == [0, 1, 2, 3, 4], kind  # the small ones are all there
        left_out = [p for p in data["problems"] if "left out" in p]
        assert len(served) + len(left_out) == 9, kind
        assert left_out, kind
        assert all(" bytes, left out: an answer decodes at most " in p for p in left_out), \
            data["problems"]
