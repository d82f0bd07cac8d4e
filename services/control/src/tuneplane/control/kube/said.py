"""What Kubernetes said of a launch's Job, as the run page lists it beside the attempt: the
events of the Job and of its pods (Scheduled, FailedScheduling, Pulling, ErrImageNeverPull,
Killing, PodFailurePolicy...), and how its pods' containers ended when not with 0 (OOMKilled,
an exit code), which Kubernetes keeps in the pods' status, not in events. Pure: the
namespace's events and the Job's pods in, the launch's records out, oldest first.

A pod's events are known by its name: ``<job>-<index>-<suffix>``, as the Job controller
names its pods (they outlive the pod: an evicted pod's are kept). The namespace is the
project's, and whoever may make events there is trusted with its launches already
(``placement``); their words reach the page as text only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
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


def _record(at: str, kind: str, reason: str, what: str, message: str,
            count: int = 1) -> dict[str, Any]:
    return {"at": at, "type": kind, "reason": reason[:128], "object": what[:300],
            "message": message[:MAX_MESSAGE], "count": count}


def events_of(job: Mapping[str, Any], events: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The events of ``job`` (by its uid) and of its pods (by their names)."""
    name, uid = job["metadata"]["name"], job["metadata"]["uid"]
    found = []
    for event in events:
        involved = event.get("involvedObject") or {}
        kind, what = str(involved.get("kind") or ""), str(involved.get("name") or "")
        if (kind == "Job" and involved.get("uid") == uid) or \
                (kind == "Pod" and what.startswith(f"{name}-")):
            count = event.get("count") or (event.get("series") or {}).get("count") or 1
            found.append(_record(_at(event), str(event.get("type") or "Normal"),
                                 str(event.get("reason") or ""), f"{kind.lower()}/{what}",
                                 str(event.get("message") or "").strip(), int(count)))
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


def said(job: Mapping[str, Any], events: Iterable[Mapping[str, Any]],
         pods: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The launch's records: its Job's and pods' events and its containers' endings, oldest
    first, the newest ``MAX_RECORDS`` of them."""
    records = [*events_of(job, events), *endings_of(pods)]
    records.sort(key=lambda r: str(r["at"]))
    return records[-MAX_RECORDS:]
