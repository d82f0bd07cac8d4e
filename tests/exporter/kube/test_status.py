"""A TelemetryDestination's conditions: Ready or Invalid with the reason, written only
when they change, with transition times kept while a condition's status stays."""

from __future__ import annotations

from typing import Any

from tuneplane.exporter.kube import status


def resource(generation: int, held: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": "a", "generation": generation}, "status": held}


def by_type(made: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in made["conditions"]}


def test_refused_is_not_ready_and_invalid_with_the_reason() -> None:
    made = status.status(resource(3), status.conditions("a: spec.sinks[0]: bad", False, "d"))
    assert made is not None
    assert made["observedGeneration"] == 3
    conditions = by_type(made)
    assert conditions["Ready"]["status"] == "False"
    assert conditions["Ready"]["reason"] == "Invalid"
    assert conditions["Invalid"] == {**conditions["Invalid"], "status": "True",
                                     "message": "a: spec.sinks[0]: bad"}


def test_ready_only_once_the_collector_runs_it() -> None:
    starting = by_type(status.status(resource(1), status.conditions(None, False, "d")) or {})
    assert (starting["Ready"]["status"], starting["Ready"]["reason"]) == (
        "False", "CollectorStarting")
    ready = by_type(status.status(resource(1), status.conditions(None, True, "d")) or {})
    assert (ready["Ready"]["status"], ready["Invalid"]["status"]) == ("True", "False")


def test_nothing_is_written_when_nothing_changed_and_times_are_kept() -> None:
    wanted = status.conditions(None, True, "d")
    first = status.status(resource(1), wanted)
    assert first is not None
    assert status.status(resource(1, first), wanted) is None
    again = status.status(resource(2, first), wanted)  # a new generation: written again
    assert again is not None
    assert by_type(again)["Ready"]["lastTransitionTime"] == \
        by_type(first)["Ready"]["lastTransitionTime"]
