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

from tests.support.charts import CHART, REPOSITORY, STORES_CHART, exec_in, helm, image_tag, settings
from tests.support.kube import kubectl, node_ip
from tests.support.processes import collector_args
from tests.support.readback import Web
from tuneplane.common.gateway.tls import generate
from tuneplane.telemetry.v1.identity import MemberKey

GROUP = "tuneplane-projector"
TOPIC = "tuneplane.telemetry.batches.v1"
GATEWAY_NAME = "tuneplane.test"


@dataclass
class Release:
    namespace: str
    work: Path
    telemetry_port: int
    timings: list[tuple[str, float]] = field(default_factory=list)

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


def values(namespace: str) -> dict[str, object]:
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
        **{f"networkPolicy.stores.{store}.podSelector": {
            **stores, "app.kubernetes.io/component": store}
           for store in ("kafka", "postgresql", "s3")},
    }


def show_state(namespace: str) -> None:
    """What the namespace holds and its pods said: for a failed test's output."""
    with contextlib.suppress(AssertionError, subprocess.TimeoutExpired):
        print(kubectl("-n", namespace, "get", "all,events", "-o", "wide"))
        for pod in json.loads(kubectl("-n", namespace, "get", "pods", "-o", "json"))["items"]:
            name = pod["metadata"]["name"]
            print(f"--- {name}\n" + kubectl("-n", namespace, "logs", name, "--tail=60",
                                            "--all-containers"))


def installed(tmp_path_factory: pytest.TempPathFactory,
            pytestconfig: pytest.Config) -> Iterator[Release]:
    """The release, installed; uninstalled (its cluster-scoped objects too) and its
    namespace deleted afterwards."""
    namespace = f"tp-{uuid.uuid4().hex[:8]}"
    work = tmp_path_factory.mktemp("helm")
    kubectl("create", "namespace", namespace)
    made = Release(namespace, work, 0)
    try:
        gateway_secret(namespace, work)
        started = time.monotonic()
        helm("install", "stores", str(STORES_CHART), "-n", namespace,
             "--set", "images.pullPolicy=Never", "--wait", "--timeout", "5m")
        made.timed("stores installed", started)
        started = time.monotonic()
        helm("install", "tuneplane", str(CHART), "-n", namespace, *settings(values(namespace)),
             "--wait", "--timeout", "10m", seconds=900)
        made.timed("tuneplane installed (migrations, then every pod ready)", started)
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
            helm("uninstall", "tuneplane", "-n", namespace, "--wait", "--timeout", "3m",
                 seconds=240)
        kubectl("delete", "namespace", namespace, "--wait=true", "--timeout=180s",
                seconds=240)
        made.timed("namespace deleted", started)
        line = "helm timings: " + ", ".join(f"{w} {s:.1f} s" for w, s in made.timings)
        capture = pytestconfig.pluginmanager.get_plugin("capturemanager")
        with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
            print(f"\n{line}", flush=True)


