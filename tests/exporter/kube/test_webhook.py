"""The admission webhook answers what ``tuneplane destinations apply`` would: the field's
path and why, checked against the release's resources already stored; a secret inline, a
Secret not named for sinks, a resource too deep or too big are refused; another release's
resources are neither judged nor judged against; what is not an AdmissionReview gets 400.
Served over HTTP here (aiohttp's test server); the chart's TLS is exercised on the
cluster (tests/kube)."""

from __future__ import annotations

import copy
import io
import json
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from tests.destinations.test_resource import VALID as UNLABELLED
from tests.destinations.test_resource import nested
from tuneplane.exporter.kube import webhook
from tuneplane.exporter.kube.scope import RELEASE_LABEL

SCOPE = webhook.Scope("ml.rel", "gw-")
#: The resource as the release takes it: labelled for it, its Secret named for sinks.
VALID: dict[str, Any] = {**UNLABELLED, "metadata": {
    "name": "prod", "labels": {RELEASE_LABEL: SCOPE.release}}}


def labelled(release: str | None, resource: dict[str, Any] = VALID) -> dict[str, Any]:
    made = copy.deepcopy(resource)
    made["metadata"]["labels"] = {} if release is None else {RELEASE_LABEL: release}
    return made


def stored(*resources: dict[str, Any]) -> webhook.Others:
    async def others() -> list[dict[str, Any]]:
        return [{**r, "metadata": {**r["metadata"], "uid": "u", "resourceVersion": "7"}}
                for r in resources]
    return others


def review(obj: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": "req-1", "operation": "CREATE", "object": obj}}


async def post(body: Any, others: webhook.Others) -> tuple[int, str]:
    """The webhook's status and text for ``body`` (sent as JSON, from a stream: a large
    body given as bytes would block aiohttp's loop)."""
    async with TestClient(TestServer(webhook.application(others, SCOPE))) as client:
        reply = await client.post(webhook.PATH, data=io.BytesIO(json.dumps(body).encode()),
                                  headers={"Content-Type": "application/json"})
        return reply.status, await reply.text()


async def ask(body: Any, others: webhook.Others) -> tuple[int, dict[str, Any]]:
    code, text = await post(body, others)
    return code, json.loads(text)


async def test_a_valid_resource_is_allowed_with_the_requests_uid() -> None:
    resource = {**copy.deepcopy(VALID), "metadata": {
        **VALID["metadata"],
        "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"},
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


@pytest.mark.parametrize("secret", ["tuneplane-secrets", "tuneplane-database", "gw"])
async def test_a_secret_not_named_for_sinks_is_refused(secret: str) -> None:
    resource = copy.deepcopy(VALID)
    resource["spec"]["sinks"][0]["secretRef"]["name"] = secret
    _, answer = await ask(review(resource), stored())
    assert answer["response"]["allowed"] is False
    assert answer["response"]["status"]["message"].startswith(
        f"prod: spec.sinks[0].secretRef.name: {secret!r} does not start with 'gw-'")


async def test_another_releases_resource_is_not_judged_and_not_judged_against() -> None:
    leaky = labelled("other.rel")
    leaky["spec"]["sinks"][0]["secretRef"]["name"] = "tuneplane-secrets"
    for resource in (leaky, labelled(None, leaky)):  # its own release's webhook judges it
        _, answer = await ask(review(resource), stored())
        assert answer["response"] == {"uid": "req-1", "allowed": True}
    other = labelled("other.rel")
    other["metadata"]["name"] = "another"  # the same sink name, another release's
    _, answer = await ask(review(VALID), stored(other))
    assert answer["response"]["allowed"] is True


async def test_a_config_nested_600_levels_deep_is_refused_with_its_path() -> None:
    resource = copy.deepcopy(VALID)
    resource["spec"]["sinks"][0]["config"] = {"retry": nested(600)}
    code, answer = await ask(review(resource), stored())
    assert code == 200
    message = answer["response"]["status"]["message"]
    assert message.startswith("prod: spec.sinks[0].config.retry.a.a"), message
    assert "nested deeper than 32 levels" in message


async def test_a_spec_over_64_kib_is_refused_saying_so() -> None:
    resource = copy.deepcopy(VALID)
    resource["spec"]["sinks"][0]["config"] = {"headers": {"x-pad": "p" * 1_100_000}}
    code, answer = await ask(review(resource), stored())
    assert code == 200
    assert answer["response"]["status"]["message"].startswith("prod: spec: 1100")
    assert "a TelemetryDestination's spec is at most 65536 bytes" in \
        answer["response"]["status"]["message"]


async def test_a_review_over_the_size_an_object_can_have_is_not_read() -> None:
    resource = copy.deepcopy(VALID)
    resource["spec"]["sinks"][0]["config"] = {"headers": {"x-pad": "p" * 1_700_000}}
    code, _ = await post(review(resource), stored())
    assert code == 413
