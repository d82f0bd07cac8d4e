"""TelemetryDestination as a custom resource on the local cluster, with the chart's
controller and admission webhook: ``kubectl apply -f destination.yaml`` starts a composed
OpenTelemetry Collector pod, which sends the fleet's curves to an OTLP receiver (another
OpenTelemetry Collector in the namespace, checking a bearer token and writing what it
takes to a file). Rotating the token's Secret (and the receiver's) reaches the running
collector without a restart. A refused resource shows the field's path in ``kubectl
apply``'s error, from the webhook and from the CRD's CEL rules (a sink naming one of the
release's own Secrets among them); with no destination the collector runs no pod. Every
resource carries the release's label (``tuneplane.dev/release``), without which no
release composes it.
"""

from __future__ import annotations

import json
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.kube.release import Release
from tests.support.charts import REPOSITORY, exec_in, image_tag
from tests.support.kube import kubectl, kubectl_refused
from tests.support.otlp_file import gauge_points
from tests.support.readback import jsonl_truth
from tuneplane.telemetry.v1.identity import MemberKey

pytestmark = [pytest.mark.usefixtures("kube_cluster", "docker_engine"), pytest.mark.timeout(900)]

OTELCOL = "tuneplane-otelcol"
#: The sink's Secret: named with the release's sink prefix (destinations.sinkSecretPrefix).
SINK_SECRET = "tuneplane-sink-token"
RECEIVED = "/out/metrics.jsonl"
#: The receiver: OTLP/HTTP taking only the token in its Secret, every metric to a file.
RECEIVER_CONFIG = {
    "extensions": {"bearertokenauth/in": {"filename": "/etc/receiver/token"}},
    "receivers": {"otlp": {"protocols": {"http": {
        "endpoint": "0.0.0.0:4318", "auth": {"authenticator": "bearertokenauth/in"}}}}},
    "exporters": {"file": {"path": RECEIVED, "flush_interval": "100ms"}},
    "service": {"extensions": ["bearertokenauth/in"],
                "pipelines": {"metrics": {"receivers": ["otlp"], "exporters": ["file"]}}}}


def waited(check: Callable[[], bool], what: str, seconds: float = 180) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, f"{what} within {seconds:.0f} s"
        time.sleep(0.5)


def apply(namespace: str, *objects: dict[str, Any]) -> None:
    kubectl("-n", namespace, "apply", "-f", "-",
            input=json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)}))


def secret(name: str, token: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name},
            "stringData": {"token": token}}


def receiver(namespace: str) -> None:
    """The receiving collector: the exporter image's OpenTelemetry Collector, in a pod
    outside the release's NetworkPolicies."""
    labels = {"app": "receiver"}
    apply(namespace, secret("receiver-token", "token-1"),
          {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "receiver"},
           "data": {"config.json": json.dumps(RECEIVER_CONFIG)}},
          {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "receiver"},
           "spec": {"selector": {"matchLabels": labels}, "template": {
               "metadata": {"labels": labels},
               "spec": {"automountServiceAccountToken": False, "containers": [{
                   "name": "receiver", "image": f"{REPOSITORY}-exporter:{image_tag()}",
                   "imagePullPolicy": "Never",
                   "command": ["/app/otelcol", "--config=/etc/receiver-config/config.json"],
                   "readinessProbe": {"tcpSocket": {"port": 4318}},
                   "volumeMounts": [
                       {"name": "config", "mountPath": "/etc/receiver-config"},
                       {"name": "token", "mountPath": "/etc/receiver"},
                       {"name": "out", "mountPath": "/out"}]}],
                   "volumes": [{"name": "config", "configMap": {"name": "receiver"}},
                               {"name": "token", "secret": {"secretName": "receiver-token"}},
                               {"name": "out", "emptyDir": {}}]}}}},
          {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "receiver"},
           "spec": {"selector": labels, "ports": [{"port": 4318, "targetPort": 4318}]}})
    kubectl("-n", namespace, "rollout", "status", "deploy/receiver", "--timeout=180s",
            seconds=200)


def destination(name: str, release: Release, sink: str, **config: Any) -> dict[str, Any]:
    return {"apiVersion": "tuneplane.dev/v1", "kind": "TelemetryDestination",
            "metadata": {"name": name, "labels": release.destinations_labels},
            "spec": {"sinks": [{
                "name": sink, "exporter": "otlp_http",
                "endpoint": f"http://receiver.{release.namespace}.svc:4318",
                "secretRef": {"name": SINK_SECRET}, "auth": {"bearerToken": {"key": "token"}},
                "config": {"compression": "none", "retry_on_failure": {"enabled": True},
                           **config}}]}}


def received(namespace: str, run: str) -> dict[tuple[str, int], list[float]]:
    """(tag, time in ns) → the values the receiver wrote for ``run``."""
    text = exec_in(namespace, "deploy/receiver", "sh", "-c", f"cat {RECEIVED} 2>/dev/null || :")
    found: dict[tuple[str, int], list[float]] = {}
    for _, attrs, time_ns, value in gauge_points(text):
        if attrs["run"] == run:
            found.setdefault((attrs["tag"], time_ns), []).append(value)
    return found


def collector_pods(namespace: str) -> list[dict[str, Any]]:
    listed = json.loads(kubectl("-n", namespace, "get", "pods", "-l",
                                "app.kubernetes.io/component=otelcol", "-o", "json"))
    return [p for p in listed["items"] if not p["metadata"].get("deletionTimestamp")]


def replicas(namespace: str) -> int:
    found = json.loads(kubectl("-n", namespace, "get", "deploy", OTELCOL, "-o", "json"))
    return int(found["spec"]["replicas"])


def send_and_receive(release: Release, run: str, work: Path) -> None:
    """A JSONL run sent by a collector; every point reaches the receiver, once."""
    member = MemberKey(run, 1, "rank-0")
    truth = jsonl_truth(work / f"{run}.jsonl", range(2_000))
    expected = {(tag, int(wall * 1e9)): [value] for (_, tag), points in truth.items()
                for _, wall, value in points}
    subprocess.run([*release.send(member, {"train": work / f"{run}.jsonl"}), "--exit-when-idle"],
                   check=True, capture_output=True, timeout=300)
    waited(lambda: len(received(release.namespace, run)) >= len(expected),
           f"the receiver never got the {len(expected)} points of {run}")
    assert received(release.namespace, run) == expected


@pytest.fixture
def names(release: Release) -> Iterator[tuple[str, str]]:
    """A destination's and its sink's names; the destination is deleted afterwards."""
    made = (f"receiver-{uuid.uuid4().hex[:6]}", f"rx-{uuid.uuid4().hex[:6]}")
    yield made
    kubectl("delete", "telemetrydestination", made[0], "--ignore-not-found")


def test_a_refused_resource_shows_the_fields_path(release: Release,
                                                  names: tuple[str, str]) -> None:
    name, sink = names
    expanding = destination(name, release, sink, headers={"x-tenant": "${env:HOME}"})
    said = kubectl_refused("apply", "-f", "-", input=json.dumps(expanding))
    assert 'admission webhook "telemetrydestinations.tuneplane.dev" denied the request' in said
    assert f"{name}: spec.sinks[0].config.headers.x-tenant: '${{env:HOME}}' would be " \
        "expanded by the collector" in said, said
    inline = destination(name, release, sink, headers={"Authorization": "Bearer x"})
    said = kubectl_refused("apply", "-f", "-", input=json.dumps(inline))
    assert "spec.sinks[0].config.headers.Authorization: a secret given inline" in said, said
    without_secret = destination(name, release, sink)
    del without_secret["spec"]["sinks"][0]["secretRef"]
    said = kubectl_refused("apply", "-f", "-", input=json.dumps(without_secret))
    assert "spec.sinks[0].auth.bearerToken: Required value: auth.bearerToken needs " \
        "secretRef" in said, said  # the CRD's CEL rule, before the webhook is asked
    own_secret = destination(name, release, sink)
    own_secret["spec"]["sinks"][0]["secretRef"]["name"] = "tuneplane-secrets"
    said = kubectl_refused("apply", "-f", "-", input=json.dumps(own_secret))
    assert f"{name}: spec.sinks[0].secretRef.name: 'tuneplane-secrets' does not start with " \
        "'tuneplane-sink-'" in said, said
    assert not json.loads(kubectl("get", "telemetrydestinations", "-o", "json"))["items"]


def test_a_destination_runs_the_collector_and_a_rotated_secret_needs_no_restart(
        release: Release, names: tuple[str, str], tmp_path: Path) -> None:
    namespace, (name, sink) = release.namespace, names
    assert replicas(namespace) == 0  # no destination: the controller runs no pod
    assert not collector_pods(namespace)
    receiver(namespace)
    apply(namespace, secret(SINK_SECRET, "token-1"))
    started = time.monotonic()
    kubectl("apply", "-f", "-", input=json.dumps(destination(name, release, sink)))
    kubectl("wait", f"telemetrydestination/{name}", "--for=condition=Ready", "--timeout=180s",
            seconds=200)
    release.timed("destination applied, its collector ready", started)
    (pod,) = collector_pods(namespace)
    conditions = json.loads(kubectl("get", "telemetrydestination", name, "-o", "json"))[
        "status"]["conditions"]
    assert {c["type"]: c["status"] for c in conditions} == {"Ready": "True", "Invalid": "False"}
    waited(lambda: "export on" in kubectl("-n", namespace, "logs", "deploy/tuneplane-exporter"),
           "the exporter never turned export on")
    started = time.monotonic()
    send_and_receive(release, f"dest-{uuid.uuid4().hex[:6]}", tmp_path)
    release.timed("2,000 lines to the receiver", started)

    # Both tokens rotated: only the new one is taken now, so a run received after this
    # proves the running collector read the new one (same pod, no restart).
    started = time.monotonic()
    apply(namespace, secret(SINK_SECRET, "token-2"), secret("receiver-token", "token-2"))
    for target, path in ((f"pod/{pod['metadata']['name']}", f"/etc/tuneplane/telemetry/{sink}"),
                         ("deploy/receiver", "/etc/receiver")):
        def rotated(t: str = target, p: str = path) -> bool:
            return exec_in(namespace, t, "cat", f"{p}/token") == "token-2"
        waited(rotated, f"the rotated token never reached {target}")
    send_and_receive(release, f"rotated-{uuid.uuid4().hex[:6]}", tmp_path)
    release.timed("token rotated, a run received with it", started)
    (after,) = collector_pods(namespace)
    assert after["metadata"]["uid"] == pod["metadata"]["uid"]
    assert after["status"]["containerStatuses"][0]["restartCount"] == 0

    # The last destination deleted: no collector pod, export off.
    kubectl("delete", "telemetrydestination", name)
    waited(lambda: replicas(namespace) == 0 and not collector_pods(namespace),
           "the collector's pod stayed after the last destination was deleted")
    waited(lambda: "export off" in kubectl("-n", namespace, "logs", "deploy/tuneplane-exporter"),
           "the exporter never turned export off")
