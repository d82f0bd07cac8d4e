"""TelemetryDestinations over the web API (in this process) and the `tuneplane` command line
(against tuneplane-web served by uvicorn): apply with generations, get, list, delete,
render; only admins read or change them, secret values are redacted in answers, clear
errors name the field."""

from __future__ import annotations

import copy
import os
import subprocess
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.support.environment import BIN
from tests.support.web import Connect


def resource(name: str, sink: str) -> dict[str, Any]:
    return {"apiVersion": "tuneplane.dev/v1", "kind": "TelemetryDestination",
            "metadata": {"name": name},
            "spec": {"sinks": [{"name": sink, "exporter": "otlphttp",
                                "endpoint": "https://otel.example:4318",
                                "secretRef": {"name": f"{sink}-secret"},
                                "auth": {"bearerToken": {"key": "token"}},
                                "config": {"zeta": 1, "alpha": {"z": [3, 1], "a": "$${env:X}"},
                                           "headers": {"x-api-key": "k-secret"}}}],
                     "extensions": {f"health_check/{sink}": {"endpoint": "0.0.0.0:13133"}}}}


@pytest.fixture
def name() -> str:
    return f"dest-{uuid.uuid4().hex[:8]}"


async def test_apply_get_list_and_delete_with_generations(
        admin: httpx.AsyncClient, name: str) -> None:
    document = resource(name, f"s-{name}")
    created = await admin.put(f"/api/v1/destinations/{name}", json=document)
    assert created.json() == {"name": name, "generation": 1, "result": "created"}, created.text
    same = await admin.put(f"/api/v1/destinations/{name}", json=document)
    assert same.json() == {"name": name, "generation": 1, "result": "unchanged"}
    changed = copy.deepcopy(document)
    changed["spec"]["sinks"][0]["config"]["zeta"] = 2
    configured = await admin.put(f"/api/v1/destinations/{name}", json=changed)
    assert configured.json() == {"name": name, "generation": 2, "result": "configured"}
    stored = (await admin.get(f"/api/v1/destinations/{name}")).json()
    assert stored["metadata"]["generation"] == 2
    assert list(stored["spec"]["sinks"][0]["config"]) == ["zeta", "alpha", "headers"]  # kept
    assert stored["spec"]["sinks"][0]["config"]["alpha"] == {"z": [3, 1], "a": "$${env:X}"}
    assert stored["spec"]["sinks"][0]["config"]["headers"] == {"x-api-key": "<redacted>"}
    assert name in [d["metadata"]["name"] for d in (await admin.get("/api/v1/destinations"))
                    .json()]
    composed = (await admin.get("/api/v1/telemetry-collector/config")).json()
    assert composed["config"]["exporters"][f"otlphttp/s-{name}"]["headers"] == {
        "x-api-key": "<redacted>"}
    assert (await admin.delete(f"/api/v1/destinations/{name}")).json() == {
        "name": name, "result": "deleted"}
    assert (await admin.get(f"/api/v1/destinations/{name}")).status_code == 404
    assert (await admin.delete(f"/api/v1/destinations/{name}")).status_code == 404
    later = (await admin.get("/api/v1/telemetry-collector/config")).json()
    assert later["generation"] > composed["generation"]


async def test_mistakes_are_refused_with_the_field_path(admin: httpx.AsyncClient,
                                                        name: str) -> None:
    bad = resource(name, f"s-{name}")
    bad["spec"]["sinks"][0]["endpoint"] = "not a url"
    refused = await admin.put(f"/api/v1/destinations/{name}", json=bad)
    assert refused.status_code == 422
    assert "spec.sinks[0].endpoint: 'not a url' is neither" in refused.json()["detail"]
    other = await admin.put(f"/api/v1/destinations/other-{name}", json=resource(name, "x"))
    assert other.status_code == 400
    assert "differs from the path" in other.json()["detail"]


async def test_a_sink_name_taken_by_another_destination_is_refused(
        admin: httpx.AsyncClient, name: str) -> None:
    sink = f"s-{name}"
    assert (await admin.put(f"/api/v1/destinations/{name}", json=resource(name, sink))
            ).status_code == 200
    try:
        clash = await admin.put(f"/api/v1/destinations/b-{name}",
                                json=resource(f"b-{name}", sink))
        assert clash.status_code == 422
        assert f"sink '{sink}' is already a sink of destination" in clash.json()["detail"]
    finally:
        await admin.delete(f"/api/v1/destinations/{name}")


async def test_only_admins_read_and_change_destinations(
        admin: httpx.AsyncClient, client: httpx.AsyncClient, api: Connect, name: str) -> None:
    assert (await admin.put(f"/api/v1/destinations/{name}", json=resource(name, f"s-{name}"))
            ).status_code == 200
    try:
        denied = await client.put(f"/api/v1/destinations/{name}", json=resource(name, "x"))
        assert denied.status_code == 403
        assert "not an admin" in denied.json()["detail"]
        for path in ("/api/v1/destinations", f"/api/v1/destinations/{name}",
                     "/api/v1/telemetry-collector/config"):
            read = await client.get(path)
            assert read.status_code == 403, path
            assert read.json()["detail"].endswith(
                "is not an admin; destinations and the collector configuration composed from "
                "them are for admins")
            assert "k-secret" not in read.text
            async with api() as anonymous:
                assert (await anonymous.get(path)).status_code == 401
    finally:
        await admin.delete(f"/api/v1/destinations/{name}")


async def test_no_answer_carries_a_secret_and_a_redacted_one_is_not_applied_back(
        admin: httpx.AsyncClient, name: str) -> None:
    assert (await admin.put(f"/api/v1/destinations/{name}", json=resource(name, f"s-{name}"))
            ).status_code == 200
    try:
        answers = [await admin.get(path) for path in (
            "/api/v1/destinations", f"/api/v1/destinations/{name}",
            "/api/v1/telemetry-collector/config")]
        assert all(a.status_code == 200 and "k-secret" not in a.text for a in answers)
        read_back = answers[1].json()
        refused = await admin.put(f"/api/v1/destinations/{name}", json=read_back)
        assert refused.status_code == 422
        assert refused.json()["detail"] == (
            f"destination {name}: spec.sinks[0].config.headers.x-api-key: '<redacted>' stands "
            "for a secret in answers; give the value itself")
    finally:
        await admin.delete(f"/api/v1/destinations/{name}")


async def test_an_expansion_is_refused_with_its_field_path(admin: httpx.AsyncClient,
                                                           name: str) -> None:
    bad = resource(name, f"s-{name}")
    bad["spec"]["sinks"][0]["config"]["headers"] = {
        "authorization": "Bearer ${env:TUNEPLANE_WEB_JWT_SECRET}"}
    refused = await admin.put(f"/api/v1/destinations/{name}", json=bad)
    assert refused.status_code == 422
    assert refused.json()["detail"].startswith(
        f"destination {name}: spec.sinks[0].config.headers.authorization: "
        "'${env:TUNEPLANE_WEB_JWT_SECRET}' would be expanded by the collector")
    assert (await admin.get(f"/api/v1/destinations/{name}")).status_code == 404


def tool(base_url: str, token: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / "tuneplane"), *args], capture_output=True, text=True,
                          check=False, timeout=60,
                          env={**os.environ, "TUNEPLANE_URL": base_url,
                               "TUNEPLANE_TOKEN": token})


def test_the_command_line_applies_lists_renders_and_deletes(
        base_url: str, admin_token: str, user_token: str, name: str, tmp_path: Path) -> None:
    path = tmp_path / "destinations.yaml"
    second = resource(f"b-{name}", f"t-{name}")
    path.write_text(yaml.safe_dump(resource(name, f"s-{name}"), sort_keys=False) + "---\n"
                    + yaml.safe_dump(second, sort_keys=False))
    applied = tool(base_url, admin_token, "destinations", "apply", "-f", str(path))
    assert applied.returncode == 0, applied.stderr
    assert applied.stdout.splitlines() == [f"destination/{name} created (generation 1)",
                                           f"destination/b-{name} created (generation 1)"]
    again = tool(base_url, admin_token, "destinations", "apply", "-f", str(path))
    assert f"destination/{name} unchanged (generation 1)" in again.stdout
    listed = tool(base_url, admin_token, "destinations", "list").stdout
    assert f"{name}\tgeneration 1\totlphttp/s-{name}" in listed
    got = yaml.safe_load(tool(base_url, admin_token, "destinations", "get", name).stdout)
    assert got["spec"]["sinks"][0]["name"] == f"s-{name}"
    assert got["spec"]["sinks"][0]["config"]["headers"] == {"x-api-key": "<redacted>"}
    rendered = tool(base_url, admin_token, "destinations", "render")
    assert f'"otlphttp/t-{name}"' in rendered.stdout
    assert "k-secret" not in rendered.stdout
    user = tool(base_url, user_token, "destinations", "list")
    assert user.returncode == 1
    assert "is not an admin; destinations and the collector configuration" in user.stderr
    offline = tool(base_url, "", "destinations", "render", "-f", str(path))
    assert offline.returncode == 0, offline.stderr
    assert f'"bearertokenauth/s-{name}"' in offline.stdout
    for each in (name, f"b-{name}"):
        assert tool(base_url, admin_token, "destinations", "delete", each).returncode == 0
    missing = tool(base_url, admin_token, "destinations", "delete", name)
    assert missing.returncode == 1
    assert f"404 no destination '{name}'" in missing.stderr
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: tuneplane.dev/v1\nkind: TelemetryDestination\n"
                   f"metadata: {{name: {name}}}\nspec: {{sinks: []}}\n")
    refused = tool(base_url, admin_token, "destinations", "apply", "-f", str(bad))
    assert refused.returncode == 1
    assert "spec.sinks: must contain at least 1 items" in refused.stderr
