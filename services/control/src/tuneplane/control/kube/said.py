"""What Kubernetes said of a launch's Job, as the run page lists it beside the attempt: the
events of the Job and of its pods (Scheduled, FailedScheduling, Pulling, ErrImageNeverPull,
Killing, PodFailurePolicy...), and how its pods' containers ended when not with 0 (OOMKilled,
an exit code), which Kubernetes keeps in the pods' status, not in events. Pure: the
namespace's events and the Job's pods in, the launch's records out, oldest first.

Events are known by the uid of what they are about: the Job's, or one of its pods' (each
pod control has seen of the Job, by the Job controller's uid label: an evicted pod's events
outlive it). The namespace is the project's, and whoever may make events there is trusted
with its launches already (``placement``); their words reach the page as text only, each
field bounded, and the newest kept by when the API server made them (not by the times an
event's maker gives).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping
from typing import Any

from tuneplane.control.kube.seen import statuses

#: The records a launch keeps (the newest), and the words of each.
MAX_RECORDS = 50
MAX_MESSAGE = 500


def _at(event: Mapping[str, Any]) -> str:
    """When the event was last seen: the core API's timestamps, or a newer event's series."""
    series = event.get("series") or {}
    return str(event.get("lastTimestamp") or series.get("lastObservedTime")
               or event.get("eventTime") or event.get("firstTimestamp")
               or (event.get("metadata") or {}).get("creationTimestamp") or "")


def _record(at: str, kind: str, reason: str, what: str, message: str, count: int = 1,
            made: str = "") -> dict[str, Any]:
    return {"at": at[:40], "type": "Warning" if kind == "Warning" else "Normal",
            "reason": reason[:128], "object": what[:300], "message": message[:MAX_MESSAGE],
            "count": count, "made": made[:40] or at[:40]}


def by_uid(events: Iterable[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    """A namespace's events by the uid of what each is about."""
    found: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for event in events:
        uid = (event.get("involvedObject") or {}).get("uid")
        if uid:
            found[str(uid)].append(event)
    return found


def events_of(job: Mapping[str, Any], events: Mapping[str, list[Mapping[str, Any]]],
              pod_uids: Collection[str]) -> list[dict[str, Any]]:
    """The events of ``job`` and of its pods (``pod_uids``), by uid and kind."""
    found = []
    for uid, kind in ((job["metadata"]["uid"], "Job"), *((p, "Pod") for p in pod_uids)):
        for event in events.get(uid, ()):
            involved = event.get("involvedObject") or {}
            if involved.get("kind") != kind:
                continue
            count = event.get("count") or (event.get("series") or {}).get("count") or 1
            found.append(_record(
                _at(event), str(event.get("type") or ""), str(event.get("reason") or ""),
                f"{kind.lower()}/{involved.get('name') or ''}",
                str(event.get("message") or "").strip(), int(count),
                str((event.get("metadata") or {}).get("creationTimestamp") or "")))
    return found


def endings_of(pods: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """How each pod's containers ended when not with 0 (OOMKilled, an exit code)."""
    found = []
    for pod in pods:
        for status in statuses(pod):
            for state in (status.get("state") or {}, status.get("lastState") or {}):
                ended = state.get("terminated") or {}
                if not ended or ended.get("exitCode") == 0:
                    continue
                said = str(ended.get("message") or "").strip().splitlines()
                found.append(_record(
                    str(ended.get("finishedAt") or ""), "Warning",
                    str(ended.get("reason") or "Error"), f"pod/{pod['metadata']['name']}",
                    f"container {status.get('name')} exited {ended.get('exitCode')}"
                    + (f": {said[-1]}" if said else "")))
    return found


def said(job: Mapping[str, Any], events: Mapping[str, list[Mapping[str, Any]]],
         pod_uids: Collection[str], pods: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The launch's records: its Job's and pods' events (``events`` by uid: ``by_uid``) and
    its containers' endings, the newest ``MAX_RECORDS`` by when they were made, oldest
    first."""
    records = [*events_of(job, events, pod_uids), *endings_of(pods)]
    records.sort(key=lambda r: str(r["made"]))
    return records[-MAX_RECORDS:]
