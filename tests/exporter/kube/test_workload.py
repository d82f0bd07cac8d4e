"""The collector's objects made from the composition: no pod without a destination, each
sink's Secret (optional) at its directory, a digest that changes with the configuration
only, and the chart's template otherwise kept as given."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.destinations.test_resource import VALID
from tuneplane.destinations.resource import parse
from tuneplane.exporter.kube import workload

OWNER = workload.Owner("rel-tuneplane-destinations", "uid-1")
TEMPLATE: dict[str, Any] = {
    "apiVersion": "apps/v1", "kind": "Deployment",
    "metadata": {"name": "rel-tuneplane-otelcol", "labels": {"a": "b"}},
    "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {
        "metadata": {"labels": {"a": "b"}},
        "spec": {"containers": [{"name": "otelcol", "image": "x",
                                 "volumeMounts": [{"name": "config", "mountPath": "/c"}]}],
                 "volumes": [{"name": "config", "configMap": {"name": "c"}}]}}}}


def made(text: str | None, documents: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    destinations = [parse(d) for d in (documents or [])]
    return workload.deployment(TEMPLATE, "ml", destinations, text, OWNER, "/etc/t")


def test_no_destination_runs_no_pod() -> None:
    assert made(None)["spec"]["replicas"] == 0
    assert made("{}")["spec"]["replicas"] == 1


def test_each_sinks_secret_is_mounted_at_its_directory_read_only() -> None:
    second = copy.deepcopy(VALID)
    second["metadata"]["name"] = "other"
    second["spec"]["sinks"] = [{"name": "plain", "exporter": "debug"},
                               {"name": "x" * 63, "exporter": "otlp", "endpoint": "h:1",
                                "secretRef": {"name": "long"}}]
    deployment = made("{}", [second, VALID])
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    assert mounts["/c"]["name"] == "config"  # the template's own stay first
    assert mounts["/etc/t/gw"]["readOnly"]
    assert f"/etc/t/{'x' * 63}" in mounts
    assert "/etc/t/plain" not in mounts  # no secretRef, nothing mounted
    secrets = {v["name"]: v["secret"]["secretName"] for v in pod["volumes"] if "secret" in v}
    assert sorted(secrets.values()) == ["gw-token", "long"]
    assert all(len(name) <= 63 for name in secrets)


def test_a_missing_sink_secret_does_not_hold_the_collector_pod_back() -> None:
    pod = made("{}", [VALID])["spec"]["template"]["spec"]
    (volume,) = [v["secret"] for v in pod["volumes"] if "secret" in v]
    assert volume == {"secretName": "gw-token", "defaultMode": 0o444, "optional": True}


def test_the_digest_follows_the_configuration_and_the_template_is_not_changed() -> None:
    before = copy.deepcopy(TEMPLATE)
    one, same, other = made('{"a": 1}'), made('{"a": 1}'), made('{"a": 2}')
    digest = workload.DIGEST
    annotations = [d["spec"]["template"]["metadata"]["annotations"][digest]
                   for d in (one, same, other)]
    assert annotations[0] == annotations[1] != annotations[2]
    assert before == TEMPLATE
    assert one["metadata"]["ownerReferences"] == [OWNER.reference()]
    assert one["metadata"]["namespace"] == "ml"


def test_a_template_without_the_collector_container_is_refused() -> None:
    broken = copy.deepcopy(TEMPLATE)
    broken["spec"]["template"]["spec"]["containers"][0]["name"] = "other"
    with pytest.raises(ValueError, match="no container named 'otelcol'"):
        workload.deployment(broken, "ml", [], None, OWNER, "/etc/t")


@pytest.mark.parametrize(("status", "replicas", "done"), [
    ({"observedGeneration": 2, "updatedReplicas": 1, "availableReplicas": 1, "replicas": 1},
     1, True),
    ({"observedGeneration": 1, "updatedReplicas": 1, "availableReplicas": 1, "replicas": 1},
     1, False),
    ({"observedGeneration": 2, "updatedReplicas": 1, "availableReplicas": 1, "replicas": 2},
     1, False),
    ({"observedGeneration": 2}, 0, True),
])
def test_rolled_out_means_the_current_template_everywhere(status: dict[str, int], replicas: int,
                                                          done: bool) -> None:
    found = {"metadata": {"generation": 2}, "spec": {"replicas": replicas}, "status": status}
    assert workload.rolled_out(found) is done
