"""A controller pass against a fake API server: only the release's resources (its label
selector) are read, composed and given a status; a resource that cannot be composed is
refused in its status while the others are exported; a status the resource changed
under is left for the next pass."""

from __future__ import annotations

import copy
import json
from typing import Any, cast

import httpx
import kr8s

from tests.destinations.test_resource import VALID, nested
from tests.exporter.kube.test_workload import TEMPLATE
from tuneplane.exporter.kube.controller import Controller
from tuneplane.exporter.kube.resources import Kubernetes
from tuneplane.exporter.kube.scope import RELEASE_LABEL
from tuneplane.exporter.kube.settings import ControllerSettings

SETTINGS = ControllerSettings.from_environ({
    "TUNEPLANE_KUBE_NAMESPACE": "ml", "TUNEPLANE_DESTINATIONS_OWNER": "rel-destinations",
    "TUNEPLANE_OTELCOL_NAME": "rel-otelcol", "TUNEPLANE_OTELCOL_TEMPLATE": json.dumps(TEMPLATE),
    "TUNEPLANE_DESTINATIONS_RELEASE": "ml.rel", "TUNEPLANE_SINK_SECRET_PREFIX": "gw-"})


def resource(name: str, sink: str, release: str | None = "ml.rel") -> dict[str, Any]:
    made = copy.deepcopy(VALID)
    made["metadata"] = {"name": name, "generation": 1, "resourceVersion": f"rv-{name}",
                        "labels": {} if release is None else {RELEASE_LABEL: release}}
    made["spec"]["sinks"][0]["name"] = sink
    return made


class FakeKubernetes(Kubernetes):
    """The API server: label selectors as it applies them, objects applied as rolled out."""

    def __init__(self, *resources: dict[str, Any], conflict: bool = False) -> None:
        super().__init__(cast(Any, None))
        self.resources = list(resources)
        self.conflict = conflict
        self.selectors: list[str] = []
        self.applied: dict[str, dict[str, Any]] = {}
        self.statuses: dict[str, tuple[dict[str, Any], str | None]] = {}

    async def destinations(self, selector: str) -> list[dict[str, Any]]:
        self.selectors.append(selector)
        wanted = dict(term.split("=", 1) for term in selector.split(","))
        return [r for r in self.resources
                if all(r["metadata"].get("labels", {}).get(k) == v for k, v in wanted.items())]

    async def get(self, version: str, plural: str, name: str, namespace: str) -> dict[str, Any]:
        return {"metadata": {"name": name, "uid": "uid-1"}}

    async def apply(self, manifest: dict[str, Any]) -> dict[str, Any]:
        self.applied[manifest["kind"]] = manifest
        replicas = manifest.get("spec", {}).get("replicas", 0)
        return {**manifest, "metadata": {**manifest["metadata"], "generation": 1},
                "status": {"observedGeneration": 1, "replicas": replicas,
                           "updatedReplicas": replicas, "availableReplicas": replicas}}

    async def set_status(self, name: str, status: dict[str, Any],
                         resource_version: str | None = None) -> None:
        if self.conflict:
            raise kr8s.ServerError("the object has been modified",
                                   response=httpx.Response(409))
        self.statuses[name] = (status, resource_version)

    def composed(self) -> dict[str, Any]:
        return dict(json.loads(self.applied["ConfigMap"]["data"]["config.json"]))


def ready(kubernetes: FakeKubernetes, name: str) -> dict[str, str]:
    conditions = kubernetes.statuses[name][0]["conditions"]
    return {c["type"]: c["status"] for c in conditions} | {
        "message": next(c["message"] for c in conditions if c["type"] == "Invalid")}


async def test_only_the_releases_resources_are_composed_and_given_a_status() -> None:
    kubernetes = FakeKubernetes(resource("mine", "gw"),
                                resource("theirs", "gw", release="other.rel"),  # same sink
                                resource("nobodys", "nobody", release=None))
    assert await Controller(SETTINGS, kubernetes).reconcile()
    assert kubernetes.selectors == [f"{RELEASE_LABEL}=ml.rel"]
    assert list(kubernetes.composed()["exporters"]) == ["otlphttp/gw"]
    assert list(kubernetes.statuses) == ["mine"]
    assert kubernetes.statuses["mine"][1] == "rv-mine"  # written on the version read
    assert ready(kubernetes, "mine")["Ready"] == "True"


async def test_a_resource_that_cannot_be_composed_is_refused_and_the_others_exported() -> None:
    deep = resource("deep", "deep")
    deep["spec"]["sinks"][0]["config"] = {"retry": nested(600)}
    leaky = resource("leaky", "leaky")
    leaky["spec"]["sinks"][0]["secretRef"]["name"] = "tuneplane-secrets"
    kubernetes = FakeKubernetes(deep, resource("fine", "gw"), leaky)
    await Controller(SETTINGS, kubernetes).reconcile()
    assert list(kubernetes.composed()["exporters"]) == ["otlphttp/gw"]
    assert ready(kubernetes, "fine") == {"Ready": "True", "Invalid": "False",
                                         "message": "every field is accepted"}
    refused = ready(kubernetes, "deep")
    assert (refused["Ready"], refused["Invalid"]) == ("False", "True")
    assert refused["message"].startswith("deep: spec.sinks[0].config.retry.a.a")
    assert "nested deeper than 32 levels" in refused["message"]
    assert ready(kubernetes, "leaky")["message"].startswith(
        "leaky: spec.sinks[0].secretRef.name: 'tuneplane-secrets' does not start with 'gw-'")
    mounted = [v["secret"]["secretName"] for v in
               kubernetes.applied["Deployment"]["spec"]["template"]["spec"]["volumes"]
               if "secret" in v]
    assert mounted == ["gw-token"]


async def test_a_status_the_resource_changed_under_is_left_for_the_next_pass() -> None:
    controller = Controller(SETTINGS, FakeKubernetes(resource("mine", "gw"), conflict=True))
    assert await controller.reconcile()
    assert controller._changed.is_set()  # the next pass runs at once
