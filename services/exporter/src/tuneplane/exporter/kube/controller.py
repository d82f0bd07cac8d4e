"""The TelemetryDestination controller: level-triggered. Each pass reads the release's
custom resources (those labelled for it, ``scope``), takes the usable ones
(``fleet.usable``, as the exporter does), composes the collector's configuration with the
same code as the API resource (``compose``), applies the collector's ConfigMap and
Deployment server-side (``workload``), and writes the status of each resource read (on
the version read: one relabelled since is left to its new release). A pass runs on every
change a watch reports, every ``resync_seconds``, and every 2 s while the collector rolls
out; a failed pass is retried.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from tuneplane.common.kube import conflict
from tuneplane.controlplane.destinations.fleet import usable
from tuneplane.destinations.compose import dumps, render
from tuneplane.exporter.kube import scope, status, workload
from tuneplane.exporter.kube.resources import GROUP_VERSION, PLURAL, Kubernetes, document
from tuneplane.exporter.kube.settings import ControllerSettings

log = logging.getLogger("tuneplane.destinations")
SETTLING_SECONDS = 2.0


class Controller:
    def __init__(self, settings: ControllerSettings, kubernetes: Kubernetes) -> None:
        self.settings = settings
        self.kubernetes = kubernetes
        self._owner: workload.Owner | None = None
        self._changed = asyncio.Event()
        self._text: str | None = None

    async def owner(self) -> workload.Owner:
        if self._owner is None:
            found = await self.kubernetes.get("apps/v1", "deployments", self.settings.owner,
                                              self.settings.namespace)
            self._owner = workload.Owner(self.settings.owner, found["metadata"]["uid"])
        return self._owner

    async def reconcile(self) -> bool:
        """One pass; whether everything has settled (the collector runs what is composed)."""
        release = self.settings.release
        resources = [r for r in await self.kubernetes.destinations(scope.selector(release))
                     if scope.selected(r, release)]
        fleet = usable([document(resource) for resource in resources],
                       secret_prefix=self.settings.sink_secret_prefix,
                       secrets_root=self.settings.secrets_root)
        config = render(fleet.usable, receiver_endpoint=self.settings.listen,
                        secrets_root=self.settings.secrets_root)
        text = None if config is None else dumps(config)
        owner, name, namespace = await self.owner(), self.settings.otelcol_name, \
            self.settings.namespace
        await self.kubernetes.apply(workload.config_map(name, namespace, text, owner))
        applied = await self.kubernetes.apply(workload.deployment(
            self.settings.template, namespace, fleet.usable, text, owner,
            self.settings.secrets_root))
        running = workload.rolled_out(applied)
        if text != self._text:
            log.info("composed %d destination(s) (%d refused); collector replicas %d",
                     len(fleet.usable), len(fleet.refused), 0 if text is None else 1)
            self._text = text
        for resource in resources:
            await self.report(resource, status.conditions(
                fleet.refused.get(resource["metadata"]["name"]), running, name))
        return running

    async def report(self, resource: dict[str, Any], wanted: list[dict[str, str]]) -> None:
        """``resource``'s status, written on the version read; one changed since (its
        labels too) is read again on the next pass."""
        changed = status.status(resource, wanted)
        if changed is None:
            return
        metadata = resource["metadata"]
        try:
            await self.kubernetes.set_status(metadata["name"], changed,
                                             metadata.get("resourceVersion"))
        except Exception as exc:
            if not conflict(exc):
                raise
            self._changed.set()

    async def watch(self) -> None:
        """Wakes the loop on every change to the release's custom resources; reconnects
        for ever."""
        kind = f"{PLURAL}.{GROUP_VERSION.split('/')[0]}"
        while True:
            try:
                async for _ in self.kubernetes.api.watch(
                        kind, label_selector=scope.selector(self.settings.release)):
                    self._changed.set()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("watching TelemetryDestinations: %s; watching again", exc)
            await asyncio.sleep(1.0)

    async def run(self, stop: asyncio.Event) -> None:
        watcher = asyncio.create_task(self.watch())
        try:
            while not stop.is_set():
                self._changed.clear()
                try:
                    settled = await self.reconcile()
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    log.warning("composing the collector failed: %s; trying again", exc)
                    settled = False
                wait = self.settings.resync_seconds if settled else SETTLING_SECONDS
                waiters: list[asyncio.Future[Any]] = [
                    asyncio.ensure_future(self._changed.wait()),
                    asyncio.ensure_future(stop.wait())]
                await asyncio.wait(waiters, timeout=wait, return_when=asyncio.FIRST_COMPLETED)
                for waiter in waiters:
                    waiter.cancel()
        finally:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher
