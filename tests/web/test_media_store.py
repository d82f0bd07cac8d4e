"""The Media page's API when the object store fails it: a record whose object is gone is
named in a decoded answer's problems while the others are served, and is 404 to download;
a store that does not answer is 503 with ``Retry-After``, never a bare 500."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import asyncpg
import httpx
import pytest

from tests.support.environment import Endpoints, free_port
from tests.support.processes import Process
from tests.web.test_media import TAG, project, rich_batch
from tuneplane.common.objectstore import s3_client
from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1.identity import MemberKey
from tuneplane.tensorboard.v1 import event_pb2 as tb
from tuneplane.web.app import create_app
from tuneplane.web.auth.oidc_settings import OidcSettings
from tuneplane.web.settings import WebSettings


def unique_text(step: int) -> pb.RichRecord:
    """A text record no other test's holds (objects are stored by their bytes' digest)."""
    value = tb.Summary.Value(tag="notes", tensor=tb.TensorProto(
        dtype=tb.DataType.DT_STRING, tensor_shape=tb.TensorShapeProto(
            dim=[tb.TensorShapeProto.Dim(size=1)]),
        string_val=[f"step {step} {uuid.uuid4()}".encode()]))
    return pb.RichRecord(source="tb", tag="notes", step=step, wall_time=1.0,
                         kind=pb.RichRecord.KIND_TEXT, payload=value.SerializeToString(),
                         plugin_name="text", file="events.out.tfevents.1", offset=step)


async def stored_texts(db: asyncpg.Connection, initialised: Endpoints, run_id: str,
                       steps: list[int]) -> dict[int, str]:
    """Text records projected at ``steps``: their object keys by step."""
    member = MemberKey(run_id, 1, "rank-0")
    await project(db, [rich_batch(member, 1, [unique_text(s) for s in steps])],
                  initialised.kafka_bootstrap)
    rows = await db.fetch("SELECT step, object_key FROM rich_records WHERE run_id = $1",
                          run_id)
    return {row["step"]: row["object_key"] for row in rows}


async def test_a_record_whose_object_is_gone_is_named_and_the_others_served(
        client: httpx.AsyncClient, initialised: Endpoints, projector: Process,
        db: asyncpg.Connection, run_id: str) -> None:
    keys = await stored_texts(db, initialised, run_id, [1, 2, 3])
    s3_client(initialised.s3_endpoint).delete_object(Bucket=initialised.s3_bucket,
                                                     Key=keys[2])
    gone = f"the object {keys[2]!r} is not in the object store"
    answer = await client.get(f"/api/v1/runs/{run_id}/attempts/1/rich/text",
                              params={**TAG, "tag": "notes"})
    assert answer.status_code == 200, answer.text
    data = answer.json()
    assert [t["step"] for t in data["texts"]] == [1, 3]
    assert data["problems"] == [f"step 2 (events.out.tfevents.1@2): the record is missing: "
                                f"{gone}"]
    download = await client.get(f"/api/v1/rich/{keys[2]}")
    assert (download.status_code, download.json()) == (404, {"detail": gone})
    assert (await client.get(f"/api/v1/rich/{keys[1]}")).status_code == 200


@pytest.fixture
async def storeless(initialised: Endpoints, user_token: str) -> AsyncIterator[httpx.AsyncClient]:
    """A client of a web whose object store endpoint nothing listens on."""
    app = create_app(WebSettings(database_url=initialised.database_url,
                                 jwt_secret=initialised.jwt_secret,
                                 s3_endpoint=f"http://127.0.0.1:{free_port()}",
                                 s3_bucket=initialised.s3_bucket, oidc=OidcSettings()))
    async with app.router.lifespan_context(app), httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://tuneplane-web",
            headers={"Authorization": f"Bearer {user_token}"}) as client:
        yield client


async def test_a_store_that_does_not_answer_is_503_to_retry(
        storeless: httpx.AsyncClient, initialised: Endpoints, projector: Process,
        db: asyncpg.Connection, run_id: str) -> None:
    keys = await stored_texts(db, initialised, run_id, [1, 2])
    answers = [await storeless.get(f"/api/v1/rich/{keys[1]}"),
               await storeless.get(f"/api/v1/media/{keys[1]}"),
               await storeless.get(f"/api/v1/runs/{run_id}/attempts/1/rich/text",
                                   params={**TAG, "tag": "notes"})]
    for answer in answers:
        assert answer.status_code == 503, answer.text
        assert answer.headers["retry-after"] == "5"
        assert answer.json() == {"detail": "the object store is not answering; retry shortly"}
    listed = await storeless.get(f"/api/v1/runs/{run_id}/attempts/1/rich/steps",
                                 params={**TAG, "tag": "notes"})
    assert listed.status_code == 200  # what PostgreSQL answers alone is still served
