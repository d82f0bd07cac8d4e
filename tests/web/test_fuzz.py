"""Schema fuzzing of the web API (schemathesis): no input makes the server fail, and every
answer's body is what the OpenAPI document says it is, the raw orjson answers of the
series routes among them (validated here against their declared models, not re-checked by
the server on every request)."""

from __future__ import annotations

import asyncio
import math
import uuid
from typing import Any

import asyncpg
import httpx
import orjson
import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.core.result import Ok
from schemathesis.schemas import APIOperation
from schemathesis.specs.openapi.checks import response_schema_conformance

from tests.support.environment import Endpoints
from tests.support.processes import Process
from tests.support.truth import member_batch
from tuneplane.common.objectstore import s3_client
from tuneplane.projector.projection import RecordMeta, project
from tuneplane.projector.writer import PostgresWriter, S3ObjectStore
from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1.identity import MemberKey
from tuneplane.tensorboard.v1 import event_pb2 as tb

Operation = APIOperation[Any, Any, Any, Any]

#: What a request for the stored run names, by parameter: every route that takes them
#: answers from real rows.
MEMBER, SOURCE, TAG = "rank-0", "train", "tag0"
HISTOGRAM, TEXT, IMAGE = "weights", "notes", "samples"
#: The tag each rich route is asked about.
RICH_TAG = {"/rich/histograms": HISTOGRAM, "/rich/text": TEXT, "/rich/steps": IMAGE}
#: The run's integration artifact: its first tag is the canonical curve ``loss``.
ARTIFACT = {"version": 1, "mappings": [{"tag": TAG, "name": "loss", "goal": "minimize"}],
            "sources": [{"id": SOURCE, "kind": "jsonl", "path": "m.jsonl", "owner": MEMBER}]}
#: A 1x1 PNG.
PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010802000000907753de"
                    "0000000c4944415408d763f8cfc0000003010100c9fe92ef0000000049454e44ae"
                    "426082")


def rich(tag: str, step: int, kind: pb.RichRecord.Kind.ValueType, value: tb.Summary.Value,
         plugin: str) -> pb.RichRecord:
    return pb.RichRecord(source=SOURCE, tag=tag, step=step, wall_time=1.0 + step, kind=kind,
                         payload=value.SerializeToString(), plugin_name=plugin,
                         file="events.out.tfevents.1", offset=step)


def rich_records() -> list[pb.RichRecord]:
    """A histogram, a text and an image tag, three steps each."""
    found = []
    for step in range(3):
        found += [
            rich(HISTOGRAM, step, pb.RichRecord.KIND_HISTOGRAM, tb.Summary.Value(
                tag=HISTOGRAM, histo=tb.HistogramProto(
                    min=0.0, max=3.0, num=3, bucket_limit=[1.0, 2.0, 3.0],
                    bucket=[1.0, 1.0, 1.0])), "histograms"),
            rich(TEXT, step, pb.RichRecord.KIND_TEXT, tb.Summary.Value(
                tag=TEXT, tensor=tb.TensorProto(
                    dtype=tb.DataType.DT_STRING, tensor_shape=tb.TensorShapeProto(
                        dim=[tb.TensorShapeProto.Dim(size=1)]),
                    string_val=[f"step {step}".encode()])), "text"),
            rich(IMAGE, step, pb.RichRecord.KIND_IMAGE, tb.Summary.Value(
                tag=IMAGE, image=tb.Summary.Image(height=1, width=1, colorspace=3,
                                                  encoded_image_string=PNG)), "images")]
    return found


@pytest.fixture(scope="module")
def stored_run(initialised: Endpoints, user_token: str, web: Process) -> str:
    """A run created in the default project with two members' curves, a NaN and an infinity
    among their values (what JSON spells as strings), and rich records of three kinds."""
    run_id = f"fuzz-{uuid.uuid4().hex[:8]}"
    with httpx.Client(base_url=f"http://127.0.0.1:{web.port}", timeout=60,
                      headers={"Authorization": f"Bearer {user_token}"}) as http:
        made = http.post("/api/v1/runs", json={"run_id": run_id, "project": "default",
                                               "integration": ARTIFACT})
        assert made.status_code == 201, made.text
        started = http.post(f"/api/v1/runs/{run_id}/attempts")
        assert started.status_code == 201, started.text

    async def store() -> None:
        batches = [member_batch(MemberKey(run_id, 1, m), s, 40)
                   for m in (MEMBER, "rank-1") for s in range(3)]
        batches[1].chunks[0].values[1] = math.nan
        batches[2].chunks[0].values[0] = math.inf
        batches[0].rich.extend(rich_records())
        objects = S3ObjectStore(s3_client(initialised.s3_endpoint), initialised.s3_bucket)
        async with asyncpg.create_pool(initialised.database_url, min_size=1,
                                       max_size=2) as pool:
            await PostgresWriter(pool, objects).write_group(
                [project(b.SerializeToString(), RecordMeta(0, i, None))
                 for i, b in enumerate(batches)])

    asyncio.run(store())
    return run_id


def operations(web: Process) -> list[Operation]:
    schema = schemathesis.openapi.from_url(f"http://127.0.0.1:{web.port}/openapi.json")
    found = []
    for result in schema.get_all_operations():
        assert isinstance(result, Ok), f"the API's own OpenAPI schema is invalid: {result}"
        found.append(result.ok())
    assert len(found) >= 7
    return found


def conformance(case: Any, response: Any) -> str | None:
    """Why the answer's body is not what the schema declares for its status, or None."""
    try:
        case.validate_response(response, checks=[response_schema_conformance])
    except (Exception, BaseExceptionGroup) as exc:  # schemathesis: a group of failures
        return f"{case.method} {case.formatted_path} {case.query} -> " \
               f"{response.status_code}: {str(exc)[:600]}"
    return None


def test_no_request_makes_a_server_error_or_an_answer_unlike_its_schema(
        web: Process, user_token: str, stored_run: str) -> None:
    failures: list[str] = []
    for operation in operations(web):

        @given(case=operation.as_strategy())
        @settings(max_examples=30, deadline=None, database=None,
                  suppress_health_check=list(HealthCheck))
        def fuzz(case: Any) -> None:
            for headers in ({"Authorization": f"Bearer {user_token}"}, {}):
                response = case.call(headers=headers, timeout=60)
                if response.status_code >= 500:
                    failures.append(f"{case.method} {case.formatted_path} {case.query} -> "
                                    f"{response.status_code}: {response.text[:300]}")
                elif (why := conformance(case, response)) is not None:
                    failures.append(why)

        fuzz()
    assert failures == [], "\n".join(failures)


#: The values a read of the stored run is asked with, by parameter name.
STORED = {"attempt": 1, "member": MEMBER, "source": SOURCE, "tag": TAG, "run_path": "",
          "max_points": 7, "max_series": 5, "name": "loss", "section": ""}


def formats(operation: Operation) -> list[str]:
    """The values the operation's ``format`` parameter may take (none: no such parameter)."""
    for parameter in operation.iter_parameters():
        if parameter.name == "format":
            schema = parameter.definition.get("schema", {})
            return [str(v) for v in schema.get("enum", [])] or [
                str(c["const"]) for c in schema.get("anyOf", []) if "const" in c]
    return []


def stored_case(operation: Operation, run_id: str, fmt: str | None) -> Any | None:
    """A request of ``operation`` for the stored run, or None when it takes other input."""
    names = {p.name: p.location for p in operation.iter_parameters()}
    if names.get("run_id") != "path" or operation.method.upper() != "GET":
        return None
    path = {n: run_id if n == "run_id" else STORED.get(n) for n, where in names.items()
            if where == "path"}
    if any(value is None for value in path.values()):
        return None  # a path parameter this run has no value for (a media object's key)
    query = {n: STORED[n] for n, where in names.items() if where == "query" and n in STORED}
    for end, tag in RICH_TAG.items():
        if operation.path.endswith(end):
            query["tag"] = tag
    if fmt is not None:
        if fmt not in formats(operation):
            return None
        query["format"] = fmt
    return operation.Case(path_parameters=path, query=query)


def test_answers_about_stored_data_are_what_their_schema_declares(
        web: Process, user_token: str, stored_run: str) -> None:
    """Every read of the stored run, in both layouts where a route has two: 200, and its
    body (series, buckets, NaN spelled as a string, reduced answers) matches its model."""
    checked, failures, answered = [], [], []
    for operation in operations(web):
        for fmt in (None, "rows", "columns", "csv", "jsonl"):
            case = stored_case(operation, stored_run, fmt)
            if case is None:
                continue
            response = case.call(headers={"Authorization": f"Bearer {user_token}"},
                                 timeout=60)
            checked.append(f"{operation.path} {fmt or ''}".strip())
            answered.append((case, response))
            if response.status_code != 200:
                failures.append(f"{case.formatted_path} {case.query} -> "
                                f"{response.status_code}: {response.text[:300]}")
            elif (why := conformance(case, response)) is not None:
                failures.append(why)
    for route in ("/api/v1/runs/{run_id}/attempts/{attempt}/scalars rows",
                  "/api/v1/runs/{run_id}/attempts/{attempt}/scalars columns",
                  "/api/v1/runs/{run_id}/attempts/{attempt}/tag columns",
                  "/api/v1/runs/{run_id}/attempts/{attempt}/series",
                  "/api/v1/runs/{run_id}/attempts",
                  "/api/v1/runs/{run_id}/attempts/{attempt}/rich/histograms",
                  "/api/v1/runs/{run_id}/attempts/{attempt}/rich/text",
                  "/api/v1/runs/{run_id}/attempts/{attempt}/scalars/export csv",
                  "/api/v1/runs/{run_id}/attempts/{attempt}/scalars/export jsonl",
                  "/api/v1/runs/{run_id}/attempts/{attempt}/curves/{name} columns",
                  "/api/v1/runs/{run_id}/attempts/{attempt}/charts/sections",
                  "/api/v1/runs/{run_id}/attempts/{attempt}/charts",
                  "/api/v1/runs/{run_id}"):
        assert route in checked, f"{route} was not asked: {checked}"
    assert failures == [], "\n".join(failures)
    # The check itself sees a body unlike its model: the series answer with a count as text.
    case, response = next((c, r) for c, r in answered
                          if c.operation.path.endswith("/scalars") and
                          c.query.get("format") == "columns")
    broken = requests.Response()
    broken.status_code, broken.headers, broken.request = (
        200, response.headers, response.request)
    broken._content = orjson.dumps({**response.json(), "points_returned": "seven"})
    assert conformance(case, response) is None
    assert conformance(case, broken) is not None
