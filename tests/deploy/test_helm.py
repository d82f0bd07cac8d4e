"""The Helm chart, rendered by `helm template` (Helm from scripts/helm): defaults, and the
gateway with an externally managed certificate; ports, secret mounts and settings."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.deployables import IMAGES, required
from tests.support.environment import ROOT

CHART = ROOT / "deploy" / "helm" / "tuneplane"
REPOSITORY = yaml.safe_load((CHART / "values.yaml").read_text())["image"]["repository"]
SHARED = {"TUNEPLANE_SECRET_ENC_KEY", "TUNEPLANE_WEB_JWT_SECRET"}


def helm() -> str:
    binary = os.environ.get("TUNEPLANE_HELM", "")
    if not binary or not Path(binary).exists():
        pytest.fail("TUNEPLANE_HELM is not set: `export TUNEPLANE_HELM=$(scripts/helm)`",
                    pytrace=False)
    return binary


def render(*settings: str) -> list[dict[str, Any]]:
    args = [helm(), "template", "rel", str(CHART), "--namespace", "ml"]
    for setting in settings:
        args += ["--set", setting]
    done = subprocess.run(args, capture_output=True, text=True, check=False, timeout=120)
    assert done.returncode == 0, done.stderr
    return [d for d in yaml.safe_load_all(done.stdout) if d]


def find(documents: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    for document in documents:
        if document["kind"] == kind and document["metadata"]["name"] == name:
            return document
    present = [(d["kind"], d["metadata"]["name"]) for d in documents]
    raise AssertionError(f"no {kind} {name} in {present}")


def container(deployment: dict[str, Any]) -> dict[str, Any]:
    (only,) = deployment["spec"]["template"]["spec"]["containers"]
    return dict(only)


def env(c: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in c["env"]}


@pytest.mark.parametrize("settings", [(), ("gateway.enabled=true",),
                                      ("gateway.enabled=true", "gateway.tlsSecret=gw-tls")])
def test_every_workload_sets_what_its_deployable_requires(settings: tuple[str, ...]) -> None:
    checked = set()
    for document in render(*settings):
        if document["kind"] not in ("Deployment", "Job"):
            continue
        c = container(document)
        image = c["image"].rsplit(":", 1)[0].removeprefix(REPOSITORY + "-")
        present = {name for name, value in env(c).items() if value}
        missing = required(image, c.get("args", [])) - present
        assert not missing, f"{document['metadata']['name']} ({image}) lacks {sorted(missing)}"
        checked.add(image)
    assert checked == set(IMAGES) - (set() if settings else {"ingest", "control"})


def test_defaults_render_the_workers_and_the_migration_job_without_the_gateway() -> None:
    documents = render()
    kinds = {(d["kind"], d["metadata"]["name"]) for d in documents}
    assert ("Deployment", "rel-tuneplane-ingest") not in kinds
    assert ("Deployment", "rel-tuneplane-projector") in kinds
    job = find(documents, "Job", "rel-tuneplane-init")
    assert job["metadata"]["annotations"]["helm.sh/hook"] == "pre-install,pre-upgrade"
    assert container(job)["args"] == ["init"]
    secret = find(documents, "Secret", "rel-tuneplane-secrets")
    assert set(secret["data"]) == SHARED
    for name in ("projector", "web", "exporter"):
        deployment = find(documents, "Deployment", f"rel-tuneplane-{name}")
        spec = deployment["spec"]["template"]["spec"]
        assert spec["securityContext"]["runAsNonRoot"] is True
        values = env(container(deployment))
        for key in SHARED:  # every replica reads the same two secrets
            assert values[key] == {"secretKeyRef": {"name": "rel-tuneplane-secrets",
                                                    "key": key}}
    assert find(documents, "Deployment", "rel-tuneplane-projector")["spec"]["replicas"] == 2
    scaled = find(render("projector.replicas=5"), "Deployment", "rel-tuneplane-projector")
    assert scaled["spec"]["replicas"] == 5


def test_the_gateway_with_an_external_certificate_exposes_both_tls_ports() -> None:
    documents = render("gateway.enabled=true", "gateway.tlsSecret=gw-tls",
                       "secrets.existingSecret=shared", "gateway.route.enabled=true",
                       "gateway.route.gatewayName=edge")
    for component, port, name in (("ingest", 8444, "telemetry"),
                                  ("control", 8443, "node-control")):
        deployment = find(documents, "Deployment", f"rel-tuneplane-{component}")
        c = container(deployment)
        assert c["ports"] == [{"name": name, "containerPort": port, "protocol": "TCP"}]
        assert "--certificate=/etc/tuneplane/tls/tls.crt" in c["args"]
        assert "--private-key=/etc/tuneplane/tls/tls.key" in c["args"]
        assert c["volumeMounts"] == [{"name": "tls", "mountPath": "/etc/tuneplane/tls",
                                      "readOnly": True}]
        volumes = deployment["spec"]["template"]["spec"]["volumes"]
        assert volumes == [{"name": "tls", "secret": {"secretName": "gw-tls"}}]
        values = env(c)
        assert values["TUNEPLANE_TELEMETRY_TRUST_BUNDLE"] == "/etc/tuneplane/tls/ca.crt"
        for key in SHARED:
            assert values[key] == {"secretKeyRef": {"name": "shared", "key": key}}
        service = find(documents, "Service", f"rel-tuneplane-{component}")
        assert service["spec"]["ports"] == [{"name": name, "port": port, "targetPort": port,
                                             "protocol": "TCP", "appProtocol": "tls"}]
        assert service["spec"]["selector"]["app.kubernetes.io/component"] == component
        route = find(documents, "TLSRoute", f"rel-tuneplane-{component}")
        assert route["spec"]["parentRefs"][0]["name"] == "edge"
        assert route["spec"]["rules"][0]["backendRefs"][0]["port"] == port
    control = env(container(find(documents, "Deployment", "rel-tuneplane-control")))
    assert {"TUNEPLANE_TELEMETRY_TARGET", "TUNEPLANE_TELEMETRY_SPOOL_ROOT",
            "TUNEPLANE_TELEMETRY_COLLECTOR_ARTIFACT"} <= set(control)
    assert not [d for d in documents if d["kind"] == "Secret"]  # the existing one is used


def test_without_an_external_certificate_the_gateway_uses_the_shared_identity() -> None:
    documents = render("gateway.enabled=true")
    c = container(find(documents, "Deployment", "rel-tuneplane-ingest"))
    assert not [a for a in c["args"] if a.startswith("--certificate")]
    assert "volumeMounts" not in c
    assert "TUNEPLANE_TELEMETRY_TRUST_BUNDLE" not in env(c)


def test_exporter_sink_secrets_mount_one_directory_per_sink() -> None:
    documents = render("exporter.sinkSecrets.mimir=mimir-credentials")
    deployment = find(documents, "Deployment", "rel-tuneplane-exporter")
    assert container(deployment)["volumeMounts"] == [
        {"name": "sink-mimir", "mountPath": "/etc/tuneplane/telemetry/mimir",
         "readOnly": True}]
    assert deployment["spec"]["template"]["spec"]["volumes"] == [
        {"name": "sink-mimir", "secret": {"secretName": "mimir-credentials"}}]


def test_the_chart_lints_clean() -> None:
    for settings in ([], ["--set", "gateway.enabled=true", "--set", "gateway.tlsSecret=gw"]):
        done = subprocess.run([helm(), "lint", "--strict", str(CHART), *settings],
                              capture_output=True, text=True, check=False, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr
