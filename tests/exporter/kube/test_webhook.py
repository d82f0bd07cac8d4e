"""The admission webhook answers what ``tuneplane destinations apply`` would: the field's
path and why, checked against the resources already stored; a secret inline is refused;
what is not an AdmissionReview gets 400. Served over HTTP here (aiohttp's test server);
the chart's TLS is exercised on the cluster (tests/kube)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from tests.controlplane.destinations.test_resource import VALID
from tuneplane.exporter.kube import webhook


def stored(*resources: dict[str, Any]) -> webhook.Others:
    async def others() -> list[dict[str, Any]]:
        return [{**r, "metadata": {**r["metadata"], "uid": "u", "resourceVersion": "7"}}
                for r in resources]
    return others


def review(obj: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": "req-1", "operation": "CREATE", "object": obj}}


async def ask(body: Any, others: webhook.Others) -> tuple[int, dict[str, Any]]:
    async with TestClient(TestServer(webhook.application(others))) as client:
        reply = await client.post(webhook.PATH, json=body)
        return reply.status, await reply.json()


async def test_a_valid_resource_is_allowed_with_the_requests_uid() -> None:
    resource = {**copy.deepcopy(VALID), "metadata": {
        "name": "prod", "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"},
        "managedFields": [{}], "uid": "x"}}
    code, answer = await ask(review(resource), stored())
    assert code == 200
    assert answer["response"] == {"uid": "req-1", "allowed": True}


@pytest.mark.parametrize(("path", "value", "words"), [
    (["spec", "sinks", 0, "config", "headers"], {"x-a": "${env:TOKEN}"},
     "prod: spec.sinks[0].config.headers.x-a: '${env:TOKEN}' would be expanded"),
    (["spec", "sinks", 0, "config", "tls"], {"ca_file": "/etc/passwd"},
     "prod: spec.sinks[0].config.tls.ca_file: '/etc/passwd' is not a path relative"),
    (["spec", "sinks", 0, "config", "headers"], {"Authorization": "Bearer abc"},
     "prod: spec.sinks[0].config.headers.Authorization: a secret given inline"),
    (["spec", "extensions"], {"oauth2client/gw": {"client_secret": "s"}},
     "prod: spec.extensions.oauth2client/gw.client_secret: a secret given inline"),
])
async def test_a_refusal_names_the_field(path: list[str | int], value: Any, words: str) -> None:
    resource = copy.deepcopy(VALID)
    node: Any = resource
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    code, answer = await ask(review(resource), stored())
    assert code == 200
    response = answer["response"]
    assert response["allowed"] is False
    assert response["status"]["code"] == 422
    assert response["status"]["message"].startswith(words), response["status"]["message"]


async def test_another_resources_sink_is_refused_and_its_own_update_is_not() -> None:
    other = copy.deepcopy(VALID)
    other["metadata"]["name"] = "another"
    _, clash = await ask(review(VALID), stored(other))
    assert "sink 'gw' is already a sink of destination 'another'" in \
        clash["response"]["status"]["message"]
    _, update = await ask(review(VALID), stored(VALID))  # itself, as stored before
    assert update["response"]["allowed"] is True


async def test_what_is_not_an_admission_review_gets_400() -> None:
    code, answer = await ask({"request": {}}, stored())
    assert code == 400
    assert answer == {"message": "not an AdmissionReview"}
