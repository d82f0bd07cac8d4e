"""What a TelemetryDestination's status says (pure): two conditions, in the form
Kubernetes' own resources use (type, status, reason, message, observedGeneration,
lastTransitionTime).

- ``Ready``: True (reason ``Exporting``) once it is composed and the collector's Deployment
  runs that composition; False with reason ``Invalid`` (and why) when it is not composed,
  or ``CollectorStarting`` while the Deployment rolls out.
- ``Invalid``: True with the field's path and why it is not composed; False otherwise.

A condition keeps its transition time while its status stays the same.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def conditions(refused: str | None, rolled_out: bool, deployment: str) -> list[dict[str, str]]:
    """The conditions, without observedGeneration and transition times."""
    if refused is not None:
        return [{"type": "Ready", "status": "False", "reason": "Invalid",
                 "message": f"not exported: {refused}"},
                {"type": "Invalid", "status": "True", "reason": "Invalid", "message": refused}]
    ready = ({"type": "Ready", "status": "True", "reason": "Exporting",
              "message": f"composed; the collector (Deployment {deployment}) runs it"}
             if rolled_out else
             {"type": "Ready", "status": "False", "reason": "CollectorStarting",
              "message": f"composed; waiting for Deployment {deployment} to roll out"})
    return [ready, {"type": "Invalid", "status": "False", "reason": "Valid",
                    "message": "every field is accepted"}]


def status(resource: dict[str, Any], wanted: list[dict[str, str]]) -> dict[str, Any] | None:
    """The status to write for ``resource`` (as the API holds it), or None when it already
    says ``wanted`` for its current generation."""
    generation = int(resource.get("metadata", {}).get("generation", 0))
    held = resource.get("status") or {}
    before = {c.get("type"): c for c in held.get("conditions", [])}
    made = []
    for condition in wanted:
        old = before.get(condition["type"], {})
        since = old.get("lastTransitionTime") if old.get("status") == condition["status"] \
            else None
        made.append({**condition, "observedGeneration": generation,
                     "lastTransitionTime": since or now()})
    same = held.get("observedGeneration") == generation and all(
        {k: v for k, v in before.get(c["type"], {}).items() if k != "lastTransitionTime"} ==
        {k: v for k, v in c.items() if k != "lastTransitionTime"} for c in made)
    return None if same else {"observedGeneration": generation, "conditions": made}
