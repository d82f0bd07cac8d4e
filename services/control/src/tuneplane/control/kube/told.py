"""What Kubernetes told control of its launches' Jobs, kept between passes of the backend:
each launch namespace's events, read only while a Job there runs, at most every
``EVENTS_SECONDS`` (and once more as a launch ends), a page of ``PAGE`` at a time and at
most ``MAX_EVENTS`` of them; the pods seen of each Job (their events outlive them); and
each running Job's records (``said``), which the backend stores with its launch.

Only what the Jobs of the last pass need is kept: a Job no longer listed is forgotten, and
the pods seen of one that has ended are kept until its launch's end reads its records one
last time (``ending``).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

from tuneplane.control.kube import said

#: How often a namespace's events are read again while its launches run.
EVENTS_SECONDS = 10.0
#: Events read at once, and at most in all per namespace and read.
PAGE = 500
MAX_EVENTS = 5000

Events = dict[str, list[Mapping[str, Any]]]
#: The API's list call: (namespace, plural, version, params) → the answer.
Lister = Callable[[str, str, str, dict[str, Any]], Awaitable[Any]]


def ended(job: Mapping[str, Any]) -> bool:
    return any(c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
               for c in (job.get("status") or {}).get("conditions") or [])


class Told:
    def __init__(self, lister: Lister) -> None:
        self._list = lister
        self._events: dict[str, tuple[float, Events]] = {}  # by namespace
        self._pods: dict[str, tuple[str, set[str]]] = {}  # job uid → (namespace, pod uids)
        #: Job uid → its records, for the Jobs still running as last listed.
        self.records: dict[str, list[dict[str, Any]]] = {}

    async def events(self, namespace: str, *, fresh: bool = False) -> Events:
        """The namespace's events by the uid of what each is about, read again when
        ``fresh`` or ``EVENTS_SECONDS`` old."""
        read_at, events = self._events.get(namespace, (0.0, {}))
        if fresh or time.monotonic() - read_at >= EVENTS_SECONDS:
            items: list[Mapping[str, Any]] = []
            params: dict[str, Any] = {"limit": PAGE}
            while len(items) < MAX_EVENTS:
                page = await self._list(namespace, "events", "v1", params)
                items += page.get("items", [])
                params["continue"] = (page.get("metadata") or {}).get("continue")
                if not params["continue"]:
                    break
            events = said.by_uid(items[:MAX_EVENTS])
            self._events[namespace] = (time.monotonic(), events)
        return events

    def _pods_of(self, namespace: str, job: Mapping[str, Any],
                 pods: Iterable[Mapping[str, Any]]) -> set[str]:
        _, seen = self._pods.setdefault(job["metadata"]["uid"], (namespace, set()))
        seen.update(str(p["metadata"]["uid"]) for p in pods if p["metadata"].get("uid"))
        return seen

    async def listed(self, namespace: str, jobs: list[dict[str, Any]],
                     pods_of: Mapping[str, list[dict[str, Any]]]) -> None:
        """The namespace's Jobs as listed in this pass, with their own pods: the records of
        those still running (events read when one runs), and the others forgotten."""
        listed = {job["metadata"]["uid"] for job in jobs}
        running = [job for job in jobs if not ended(job)]
        for uid in [u for u, (n, _) in self._pods.items() if n == namespace and u not in listed]:
            del self._pods[uid]  # gone: its launch ended before (its records stored then)
            self.records.pop(uid, None)
        for job in jobs:
            if ended(job):  # its pods seen are kept for its launch's end (``ending``)
                self.records.pop(job["metadata"]["uid"], None)
        if not running:
            return
        events = await self.events(namespace)
        for job in running:
            own = pods_of.get(job["metadata"]["uid"], [])
            self.records[job["metadata"]["uid"]] = said.said(
                job, events, self._pods_of(namespace, job, own), own)

    async def ending(self, namespace: str, job: Mapping[str, Any],
                     pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The records of a Job whose launch has just ended, read now; forgotten after."""
        records = said.said(job, await self.events(namespace, fresh=True),
                            self._pods_of(namespace, job, pods), pods)
        self._pods.pop(job["metadata"]["uid"], None)
        self.records.pop(job["metadata"]["uid"], None)
        return records
