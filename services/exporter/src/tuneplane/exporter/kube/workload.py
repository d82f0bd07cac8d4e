"""The composed OpenTelemetry Collector as Kubernetes objects, made from the composition
alone (pure): its configuration in a ConfigMap, and its Deployment from the chart's
template (``TUNEPLANE_OTELCOL_TEMPLATE``: labels, image, security context, the
configuration's mount) with what the destinations decide added:

- replicas: 1 while a destination is composed, 0 with none (no pod, nothing buffered);
- each sink's ``secretRef`` Secret mounted read-only at ``<secrets root>/<sink>/``, where
  the composition reads its files (a rotated Secret reaches the files through the
  kubelet, and the collector re-reads them: no restart). Optional: a missing Secret leaves
  the sink's directory empty rather than keeping the pod, every sink's, from starting
  (its bearertokenauth starts without the file, says so, and sends no token until the
  collector restarts; a file its ``config`` names, ``tls.ca_file``, still stops the
  collector);
- the configuration's digest as an annotation of the pod template, so a changed
  composition rolls the pods and an unchanged one leaves them be.

Both are owned by the controller's Deployment: uninstalling the release removes them.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tuneplane.destinations.resource import Destination

CONFIG_KEY = "config.json"
DIGEST = "tuneplane.dev/config-sha256"
CONTAINER = "otelcol"


@dataclass(frozen=True, slots=True)
class Owner:
    name: str
    uid: str

    def reference(self) -> dict[str, Any]:
        return {"apiVersion": "apps/v1", "kind": "Deployment", "name": self.name,
                "uid": self.uid, "blockOwnerDeletion": False}


def config_map(name: str, namespace: str, text: str | None, owner: Owner) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace,
                         "ownerReferences": [owner.reference()]},
            "data": {CONFIG_KEY: text if text is not None else "{}\n"}}


def volume_name(sink: str) -> str:
    """A volume name (a DNS label of at most 63 characters) for any sink name."""
    return f"sink-{hashlib.sha256(sink.encode()).hexdigest()[:16]}"


def sink_volumes(destinations: Sequence[Destination], secrets_root: str
                 ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(volumes, mounts) of every sink with a ``secretRef``, in composition order."""
    volumes, mounts = [], []
    for destination in sorted(destinations, key=lambda d: d.name):
        for sink in destination.sinks:
            if sink.secret is None:
                continue
            volumes.append({"name": volume_name(sink.name),
                            "secret": {"secretName": sink.secret, "defaultMode": 0o444,
                                       "optional": True}})
            mounts.append({"name": volume_name(sink.name),
                           "mountPath": sink.secret_dir(secrets_root), "readOnly": True})
    return volumes, mounts


def deployment(template: dict[str, Any], namespace: str, destinations: Sequence[Destination],
               text: str | None, owner: Owner, secrets_root: str) -> dict[str, Any]:
    """The collector's Deployment: ``template`` with replicas, the sinks' Secrets and the
    configuration's digest."""
    made = copy.deepcopy(template)
    made["metadata"]["namespace"] = namespace
    made["metadata"]["ownerReferences"] = [owner.reference()]
    made["spec"]["replicas"] = 0 if text is None else 1
    pod = made["spec"]["template"]
    pod.setdefault("metadata", {}).setdefault("annotations", {})[DIGEST] = \
        hashlib.sha256((text or "").encode()).hexdigest()
    volumes, mounts = sink_volumes(destinations, secrets_root)
    pod["spec"]["volumes"] = [*pod["spec"].get("volumes", []), *volumes]
    for container in pod["spec"]["containers"]:
        if container["name"] == CONTAINER:
            container["volumeMounts"] = [*container.get("volumeMounts", []), *mounts]
            break
    else:
        raise ValueError(f"the collector's template has no container named {CONTAINER!r}")
    return made


def rolled_out(found: dict[str, Any]) -> bool:
    """Whether a Deployment as the API holds it runs its current template on every replica
    it wants (none wanted counts)."""
    spec, status = found.get("spec", {}), found.get("status", {})
    wanted = int(spec.get("replicas", 1))
    return (int(status.get("observedGeneration", 0)) >= int(found["metadata"]["generation"])
            and int(status.get("updatedReplicas", 0)) == wanted
            and int(status.get("availableReplicas", 0)) == wanted
            and int(status.get("replicas", 0)) == wanted)
