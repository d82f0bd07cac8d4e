"""What is composed from a set of stored documents, the same for both backends: each
parses alone and goes with those of smaller names; the others are refused with why."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.destinations.test_resource import VALID, nested
from tuneplane.controlplane.destinations import fleet as fleet_module
from tuneplane.controlplane.destinations.fleet import usable
from tuneplane.destinations import compose
from tuneplane.destinations.resource import Destination


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


def test_a_stored_secret_ref_not_named_for_sinks_is_skipped_with_its_reason() -> None:
    own = named("steal", "two")
    own["spec"]["sinks"][0]["secretRef"]["name"] = "tuneplane-secrets"
    fleet = usable([named("a", "one"), own], secret_prefix="gw-")
    assert [d.name for d in fleet.usable] == ["a"]
    assert fleet.refused["steal"].startswith(
        "steal: spec.sinks[0].secretRef.name: 'tuneplane-secrets' does not start with 'gw-'")
    assert [d.name for d in usable([own]).usable] == ["steal"]  # PostgreSQL: not checked


def test_a_resource_nested_600_levels_deep_is_skipped_and_the_rest_composed() -> None:
    deep = named("deep", "two")
    deep["spec"]["sinks"][0]["config"] = {"retry": nested(600)}
    fleet = usable([named("a", "one"), deep, named("z", "three")])
    assert [d.name for d in fleet.usable] == ["a", "z"]
    assert "deep: spec.sinks[0].config.retry.a.a" in fleet.refused["deep"]
    assert "nested deeper than 32 levels" in fleet.refused["deep"]


def test_each_resource_is_composed_alone_under_the_secrets_root_composed_with() -> None:
    rooted = named("rooted", "two")
    rooted["spec"]["sinks"][0]["config"] = {"token_source": "/srv/secrets/one/token"}
    fleet = usable([named("a", "one"), rooted], secrets_root="/srv/secrets")
    assert [d.name for d in fleet.usable] == ["a"]
    assert "spec.sinks[0].config.token_source: names the secrets root (/srv/secrets)" in \
        fleet.refused["rooted"]


def test_whatever_goes_wrong_with_one_resource_skips_it_alone(
        monkeypatch: pytest.MonkeyPatch) -> None:
    real = compose.render

    def render(destinations: list[Destination], **kwargs: Any) -> dict[str, Any] | None:
        if any(d.name == "bad" for d in destinations):
            raise RecursionError("maximum recursion depth exceeded")
        return real(destinations, **kwargs)

    monkeypatch.setattr(fleet_module, "render", render)
    fleet = usable([named("a", "one"), named("bad", "two"), named("c", "three")])
    assert [d.name for d in fleet.usable] == ["a", "c"]
    assert fleet.refused == {
        "bad": "bad: not composed: RecursionError: maximum recursion depth exceeded"}
