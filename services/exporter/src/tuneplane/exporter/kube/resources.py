"""The Kubernetes API as the controller, its webhook and the exporter use it, through kr8s
(its client: authentication in the pod or from a kubeconfig, retries on expired
credentials): the release's TelemetryDestinations (a label selector, ``scope``) listed and
given a status, objects of the release's namespace applied server-side and read.

A custom resource's document is what ``resource.parse`` reads: apiVersion, kind, the
name and labels of its metadata, and its spec; nothing the API server adds (uid,
resourceVersion, managedFields, kubectl's last-applied annotation) reaches the
composition.
"""

from __future__ import annotations

from typing import Any

from tuneplane.common.db import Connection
from tuneplane.common.kube import APPLY, JSON_MERGE
from tuneplane.common.kube import Kubernetes as BaseKubernetes
from tuneplane.controlplane.destinations import store
from tuneplane.destinations.resource import API_VERSION

GROUP_VERSION = API_VERSION
PLURAL = "telemetrydestinations"
FIELD_MANAGER = "tuneplane-destinations"


def document(resource: dict[str, Any]) -> dict[str, Any]:
    """The part of a custom resource the composition reads."""
    metadata = resource.get("metadata", {})
    kept: dict[str, Any] = {"name": metadata.get("name")}
    if metadata.get("labels"):
        kept["labels"] = metadata["labels"]
    return {"apiVersion": resource.get("apiVersion"), "kind": resource.get("kind"),
            "metadata": kept, "spec": resource.get("spec")}


class Kubernetes(BaseKubernetes):
    """The calls this package makes."""

    async def destinations(self, selector: str) -> list[dict[str, Any]]:
        """The TelemetryDestinations ``selector`` (a label selector: the release's,
        ``scope.selector``) selects, as the API holds them (metadata and status too)."""
        listed = await self.call("GET", GROUP_VERSION, PLURAL,
                                 params={"labelSelector": selector})
        return list(listed.get("items", []))

    async def set_status(self, name: str, status: dict[str, Any],
                         resource_version: str | None = None) -> None:
        """The resource's status; with ``resource_version``, only on that version of it
        (the API server answers 409 Conflict once it has changed, its labels too)."""
        body: dict[str, Any] = {"status": status}
        if resource_version is not None:
            body["metadata"] = {"resourceVersion": resource_version}
        await self.call("PATCH", GROUP_VERSION, f"{PLURAL}/{name}/status", body=body,
                        content_type=JSON_MERGE)

    async def apply(self, manifest: dict[str, Any]) -> dict[str, Any]:
        """Server-side apply of a namespaced object, owned by ``FIELD_MANAGER``."""
        version = manifest["apiVersion"]
        plural = f"{manifest['kind'].lower()}s"
        applied = await self.call(
            "PATCH", version, f"{plural}/{manifest['metadata']['name']}",
            namespace=manifest["metadata"]["namespace"], body=manifest, content_type=APPLY,
            params={"fieldManager": FIELD_MANAGER, "force": "true"})
        return dict(applied)

    async def get(self, version: str, plural: str, name: str, namespace: str) -> dict[str, Any]:
        return dict(await self.call("GET", version, f"{plural}/{name}", namespace=namespace))


class KubernetesDestinations:
    """The Kubernetes backend of ``fleet.DestinationStore``: the custom resources
    ``selector`` selects (the release's), with the export epoch kept in PostgreSQL
    (``store.observe``); a sink names only Secrets starting with ``secret_prefix``."""

    def __init__(self, kubernetes: Kubernetes, conn: Connection, selector: str,
                 secret_prefix: str) -> None:
        self._kubernetes = kubernetes
        self._conn = conn
        self._selector = selector
        self._secret_prefix = secret_prefix

    @classmethod
    async def connect(cls, conn: Connection, selector: str,
                      secret_prefix: str) -> KubernetesDestinations:
        return cls(await Kubernetes.connect(), conn, selector, secret_prefix)

    @property
    def secret_prefix(self) -> str | None:
        return self._secret_prefix

    async def documents(self) -> list[dict[str, Any]]:
        return [document(resource)
                for resource in await self._kubernetes.destinations(self._selector)]

    async def export_epoch(self, on: bool) -> int:
        return await store.observe(self._conn, on)


