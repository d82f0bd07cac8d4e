"""What is composed from a set of stored documents, the same for both backends: each
parses alone and goes with those of smaller names; the others are refused with why."""

from __future__ import annotations

import copy
from typing import Any

from tests.controlplane.destinations.test_resource import VALID
from tuneplane.controlplane.destinations.fleet import usable


def named(name: str, sink: str = "gw") -> dict[str, Any]:
    document = copy.deepcopy(VALID)
    document["metadata"]["name"] = name
    document["spec"]["sinks"][0]["name"] = sink
    return document


def test_every_valid_destination_is_usable_in_name_order() -> None:
    fleet = usable([named("b", "two"), named("a", "one")])
    assert [d.name for d in fleet.usable] == ["a", "b"]
    assert fleet.refused == {}


def test_one_that_does_not_parse_is_refused_with_its_path_and_the_rest_stays() -> None:
    broken = named("bad", "three")
    broken["spec"]["sinks"][0]["config"] = {"endpoint": "https://twice.example"}
    fleet = usable([named("a", "one"), broken])
    assert [d.name for d in fleet.usable] == ["a"]
    assert fleet.refused["bad"].startswith("bad: spec.sinks[0].config.endpoint:")


def test_a_conflict_refuses_the_later_name_only() -> None:
    fleet = usable([named("z", "gw"), named("a", "gw")])
    assert [d.name for d in fleet.usable] == ["a"]
    assert "is already a sink of destination 'a'" in fleet.refused["z"]


def test_a_document_without_a_name_is_refused_not_raised() -> None:
    fleet = usable([{"spec": {}}])
    assert fleet.usable == ()
    assert list(fleet.refused) == ["(no name)"]
