"""The Kubernetes API as the controller, its webhook and the exporter use it, through kr8s
(its client: authentication in the pod or from a kubeconfig, retries on expired
credentials): TelemetryDestinations listed and given a status, objects of the release's
namespace applied server-side and read.

A custom resource's document is what ``resource.parse`` reads: apiVersion, kind, the
name and labels of its metadata, and its spec; nothing the API server adds (uid,
resourceVersion, managedFields, kubectl's last-applied annotation) reaches the
composition.
"""

from __future__ import annotations

import json
from typing import Any

import kr8s.asyncio

from tuneplane.common.db import Connection
from tuneplane.controlplane.destinations import store
from tuneplane.controlplane.destinations.resource import API_VERSION

GROUP_VERSION = API_VERSION
PLURAL = "telemetrydestinations"
FIELD_MANAGER = "tuneplane-destinations"
JSON_MERGE = "application/merge-patch+json"
APPLY = "application/apply-patch+yaml"


def document(resource: dict[str, Any]) -> dict[str, Any]:
    """The part of a custom resource the composition reads."""
    metadata = resource.get("metadata", {})
    kept: dict[str, Any] = {"name": metadata.get("name")}
    if metadata.get("labels"):
        kept["labels"] = metadata["labels"]
    return {"apiVersion": resource.get("apiVersion"), "kind": resource.get("kind"),
            "metadata": kept, "spec": resource.get("spec")}


class Kubernetes:
    """One API connection (kr8s), for the calls this package makes."""

    def __init__(self, api: kr8s.asyncio.Api) -> None:
        self.api = api

    @classmethod
    async def connect(cls) -> Kubernetes:
        """In a pod: its service account; elsewhere: ``KUBECONFIG``."""
        return cls(await kr8s.asyncio.api())

    async def call(self, method: str, version: str, url: str, *, namespace: str | None = None,
                   body: Any = None, content_type: str = "application/json",
                   params: dict[str, str] | None = None) -> Any:
        kwargs: dict[str, Any] = {}
        if body is not None:
            kwargs["content"] = json.dumps(body)
            kwargs["headers"] = {"Content-Type": content_type}
        if params:
            kwargs["params"] = params
        async with self.api.call_api(method, version=version, url=url, namespace=namespace,
                                     **kwargs) as response:
            return response.json()

    async def destinations(self) -> list[dict[str, Any]]:
        """Every TelemetryDestination as the API holds it (metadata and status too)."""
        listed = await self.call("GET", GROUP_VERSION, PLURAL)
        return list(listed.get("items", []))

    async def set_status(self, name: str, status: dict[str, Any]) -> None:
        await self.call("PATCH", GROUP_VERSION, f"{PLURAL}/{name}/status",
                        body={"status": status}, content_type=JSON_MERGE)

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
    """The Kubernetes backend of ``fleet.DestinationStore``: the custom resources, with the
    export epoch kept in PostgreSQL (``store.observe``)."""

    def __init__(self, kubernetes: Kubernetes, conn: Connection) -> None:
        self._kubernetes = kubernetes
        self._conn = conn

    @classmethod
    async def connect(cls, conn: Connection) -> KubernetesDestinations:
        return cls(await Kubernetes.connect(), conn)

    async def documents(self) -> list[dict[str, Any]]:
        return [document(resource) for resource in await self._kubernetes.destinations()]

    async def export_epoch(self, on: bool) -> int:
        return await store.observe(self._conn, on)


