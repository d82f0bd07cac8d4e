"""The release the chart tests share (tests/kube/conftest.py installs it once): the stores
chart, then the tuneplane chart with the gateway on NodePorts, an external certificate,
two ingest and two projector pods, the exporter with TelemetryDestinations as custom
resources, and NetworkPolicies for the stores; and what the tests ask of it."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.support.charts import (
    CHART,
    REPOSITORY,
    STORES_CHART,
    collector_image,
    exec_in,
    helm,
    image_tag,
    settings,
)
from tests.support.kube import kubectl, node_ip, run_kubectl
from tests.support.processes import collector_args
from tests.support.readback import Web
from tuneplane.common.gateway.tls import generate
from tuneplane.telemetry.v1.identity import MemberKey

GROUP = "tuneplane-projector"
TOPIC = "tuneplane.telemetry.batches.v1"
GATEWAY_NAME = "tuneplane.test"
#: The release's name (``helm install tuneplane``).
NAME = "tuneplane"
#: The label a TelemetryDestination carries for the release to compose it.
DESTINATIONS_LABEL = "tuneplane.dev/release"
#: A project whose launches' spools are granted a node directory (``hostPath``) that the
#: network filesystem test mounts a network filesystem on (``network_grant``).
NETWORK_GRANT_PROJECT = "network-grant"
#: A project whose launches' spools are generic ephemeral volumes of a local StorageClass
#: (``storageClass:<release namespace>-local``), which the test makes with local volumes.
LOCAL_CLASS_PROJECT = "local-class"
#: Seconds control's workload tokens live in the release.
WORKLOAD_TOKEN_TTL = 12


@dataclass
class Release:
    namespace: str
    work: Path
    telemetry_port: int
    timings: list[tuple[str, float]] = field(default_factory=list)
    #: The collector artifact control names; its image is tuneplane-collector:<digest>.
    collector_digest: str = ""

    @property
    def jobs_namespace(self) -> str:
        """Where the release's Kubernetes launches run (every project's)."""
        return f"{self.namespace}-jobs"

    def admin(self, *args: str) -> str:
        """``tuneplane-admin ARGS`` in the release's admin pod."""
        return exec_in(self.namespace, "deploy/tuneplane-admin", "tuneplane-admin", *args)

    def web(self) -> Web:
        service = json.loads(kubectl("-n", self.namespace, "get", "service", "tuneplane-web",
                                     "-o", "json"))
        token = self.admin("user-add", "--admin", "--user",
                           f"tester-{uuid.uuid4().hex[:6]}").strip().splitlines()[-1]
        return Web(f"http://{service['spec']['clusterIP']}:8080", token)

    def send(self, member: MemberKey, sources: dict[str, Path], *extra: str) -> list[str]:
        """A collector's arguments for ``member``: to the telemetry NodePort, trusting the
        certificate's own CA, with a workload token from the admin pod."""
        token = self.work / f"{member.run_id}.token"
        token.write_text(self.admin("token", "--run", member.run_id, "--attempt",
                                    str(member.attempt), "--member", member.member).strip())
        return collector_args(self.telemetry_port, self.work, token, member,
                              self.work / member.run_id, sources, *extra, host=node_ip())

    @property
    def destinations_labels(self) -> dict[str, str]:
        """The labels of a TelemetryDestination this release composes (the chart's default
        value, ``<namespace>.<release>``)."""
        return {DESTINATIONS_LABEL: f"{self.namespace}.{NAME}"}

    def timed(self, what: str, started: float) -> None:
        self.timings.append((what, time.monotonic() - started))

    def pods(self, component: str) -> dict[str, str]:
        """The release's pods of ``component``: name → uid."""
        listed = json.loads(kubectl("-n", self.namespace, "get", "pods", "-l",
                                    f"app.kubernetes.io/component={component}", "-o", "json"))
        return {p["metadata"]["name"]: p["metadata"]["uid"] for p in listed["items"]}


def gateway_secret(namespace: str, work: Path) -> None:
    """The externally managed certificate: a CA of its own, the server's certificate for
    the node's address and the gateway's name, as a kubernetes.io/tls Secret with ca.crt."""
    identity = generate([node_ip(), GATEWAY_NAME], now=dt.datetime.now(dt.UTC))
    (work / "ca.pem").write_bytes(identity.ca_pem)
    (work / "tls.crt").write_bytes(identity.certificate_pem)
    (work / "tls.key").write_bytes(identity.private_key_pem)
    kubectl("-n", namespace, "create", "secret", "generic", "gateway-tls",
            "--type=kubernetes.io/tls", f"--from-file=tls.crt={work / 'tls.crt'}",
            f"--from-file=tls.key={work / 'tls.key'}", f"--from-file=ca.crt={work / 'ca.pem'}")


def values(namespace: str, collector_digest: str) -> dict[str, object]:
    stores = {"app.kubernetes.io/name": "tuneplane-stores",
              "app.kubernetes.io/instance": "stores"}
    return {
        "image.repository": REPOSITORY, "image.tag": image_tag(), "image.pullPolicy": "Never",
        "database.existingSecret": "stores-database", "s3.credentialsSecret": "stores-s3",
        "s3.endpoint": f"http://stores-s3.{namespace}.svc:8333",
        "kafka.bootstrap": f"stores-kafka.{namespace}.svc.cluster.local:9092",
        "kafka.topicReplication": 1, "kafka.topicMinInsync": 1, "kafka.topicPartitions": 4,
        "gateway.enabled": True, "gateway.tlsSecret": "gateway-tls",
        "gateway.hostname": GATEWAY_NAME, "gateway.service.type": "NodePort",
        "gateway.ingest.replicas": 2, "projector.replicas": 2,
        # Kubernetes launches in the jobs namespace, their sidecars from the collector
        # image of this checkout's artifact, reaching ingest and control by their Services.
        "gateway.collectorArtifact": f"/opt/tuneplane/artifacts/{collector_digest}",
        "gateway.telemetryTarget": f"tuneplane-ingest.{namespace}.svc:8444",
        # Short-lived workload tokens: a launch that trains longer renews them (half-life).
        "gateway.control.workloadTokenTtl": WORKLOAD_TOKEN_TTL,
        "gateway.control.kubernetesLaunches.enabled": True,
        "gateway.control.kubernetesLaunches.namespaces": [f"{namespace}-jobs"],
        "gateway.control.kubernetesLaunches.pullPolicy": "Never",
        "gateway.control.kubernetesLaunches.spool": [
            f"{NETWORK_GRANT_PROJECT}=hostPath:{network_grant(namespace)}",
            f"{LOCAL_CLASS_PROJECT}=storageClass:{local_class(namespace)}:64Mi", "emptyDir"],
        # The lifecycle's CronJobs start nothing on their own (a test makes their Jobs).
        "lifecycle.suspend": True,
        **{f"networkPolicy.stores.{store}.podSelector": {
            **stores, "app.kubernetes.io/component": store}
           for store in ("kafka", "postgresql", "s3")},
    }


def network_grant(namespace: str) -> Path:
    """The node directory the release's ``NETWORK_GRANT_PROJECT`` spools are granted."""
    return Path(f"/tmp/tuneplane-{namespace}-network-grant")


def local_class(namespace: str) -> str:
    """The local StorageClass the release's ``LOCAL_CLASS_PROJECT`` spools are granted."""
    return f"{namespace}-local"


def webhook_answering(made: Release, seconds: float = 120) -> None:
    """Returns once the admission webhook judges TelemetryDestinations: its pod is ready as
    soon as it listens, but until kube-proxy has written its Service's rules a call is
    refused, and the API server fails the create (``failurePolicy: Fail``) instead of
    judging it. Asked with a server-side dry run of a resource it refuses."""
    probe = json.dumps({
        "apiVersion": "tuneplane.dev/v1", "kind": "TelemetryDestination",
        "metadata": {"name": "webhook-probe", "labels": made.destinations_labels},
        "spec": {"sinks": [{"name": "probe", "exporter": "otlp_http",
                            "endpoint": "http://probe.invalid:4318",
                            "config": {"headers": {"x": "${env:HOME}"}}}]}})
    deadline = time.monotonic() + seconds
    while True:
        done = run_kubectl(("apply", "--dry-run=server", "-f", "-"), probe, 60)
        if "denied the request" in done.stderr:
            return
        assert time.monotonic() < deadline, f"the admission webhook never answered: {done}"
        time.sleep(0.5)


def show_state(namespace: str) -> None:
    """What the namespace holds and its pods said: for a failed test's output."""
    with contextlib.suppress(AssertionError, subprocess.TimeoutExpired):
        print(kubectl("-n", namespace, "get", "all,events", "-o", "wide"))
        for pod in json.loads(kubectl("-n", namespace, "get", "pods", "-o", "json"))["items"]:
            name = pod["metadata"]["name"]
            print(f"--- {name}\n" + kubectl("-n", namespace, "logs", name, "--tail=60",
                                            "--all-containers"))


@contextlib.contextmanager
def deployed(work: Path) -> Iterator[Release]:
    """The release in a namespace of its own, installed with its work files in ``work``;
    uninstalled (its cluster-scoped objects too) and its namespaces deleted afterwards."""
    namespace = f"tp-{uuid.uuid4().hex[:8]}"
    kubectl("create", "namespace", namespace)
    made = Release(namespace, work, 0)
    kubectl("create", "namespace", made.jobs_namespace)
    try:
        gateway_secret(namespace, work)
        started = time.monotonic()
        digest = made.collector_digest = collector_image(work / "artifact")
        made.timed("collector image built and imported", started)
        started = time.monotonic()
        helm("install", "stores", str(STORES_CHART), "-n", namespace,
             "--set", "images.pullPolicy=Never", "--wait", "--timeout", "5m")
        made.timed("stores installed", started)
        started = time.monotonic()
        helm("install", NAME, str(CHART), "-n", namespace, *settings(values(namespace, digest)),
             "--wait", "--timeout", "10m", seconds=900)
        made.timed("tuneplane installed (migrations, then every pod ready)", started)
        webhook_answering(made)
        ingest = json.loads(kubectl("-n", namespace, "get", "service", "tuneplane-ingest",
                                    "-o", "json"))
        made.telemetry_port = ingest["spec"]["ports"][0]["nodePort"]
        yield made
    except BaseException:
        show_state(namespace)
        raise
    finally:
        started = time.monotonic()
        with contextlib.suppress(RuntimeError, subprocess.TimeoutExpired):
            helm("uninstall", NAME, "-n", namespace, "--wait", "--timeout", "3m",
                 seconds=240)
        for gone in (made.jobs_namespace, namespace):
            kubectl("delete", "namespace", gone, "--wait=true", "--timeout=180s",
                    seconds=240)
        made.timed("namespace deleted", started)


def installed(tmp_path_factory: pytest.TempPathFactory,
              pytestconfig: pytest.Config) -> Iterator[Release]:
    """The tests' release (``deployed``); its timings printed at the end."""
    timings: list[tuple[str, float]] = []
    try:
        with deployed(tmp_path_factory.mktemp("helm")) as made:
            timings = made.timings
            yield made
    finally:
        line = "helm timings: " + ", ".join(f"{w} {s:.1f} s" for w, s in timings)
        capture = pytestconfig.pluginmanager.get_plugin("capturemanager")
        with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
            print(f"\n{line}", flush=True)
