"""Composition of destinations into one OpenTelemetry Collector configuration: golden
output for several destinations using every field, passthrough kept exactly."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tuneplane.controlplane.destinations.compose import dumps, render
from tuneplane.controlplane.destinations.resource import Destination, DestinationError, parse

GOLDEN = Path(__file__).parent / "golden"


def destinations() -> list[Destination]:
    return [parse(yaml.safe_load(path.read_text()), path.name)
            for path in sorted(GOLDEN.glob("*.yaml"))]


def test_several_destinations_render_to_the_golden_configuration() -> None:
    rendered = render(destinations())
    assert rendered is not None
    assert dumps(rendered) == (GOLDEN / "rendered.json").read_text()


def test_rendering_is_deterministic_whatever_the_order() -> None:
    first = dumps(render(destinations()) or {})
    assert dumps(render(list(reversed(destinations()))) or {}) == first


def test_config_and_extensions_pass_through_byte_for_byte() -> None:
    rendered = render(destinations())
    assert rendered is not None
    for path in sorted(GOLDEN.glob("*.yaml")):
        document = yaml.safe_load(path.read_text())
        for sink in document["spec"]["sinks"]:
            exporter = dict(rendered["exporters"][f"{sink['exporter']}/{sink['name']}"])
            composed = {k: exporter.pop(k) for k in ("endpoint", "auth")
                        if k in exporter and k not in sink.get("config", {})}
            assert json.dumps(exporter) == json.dumps(sink.get("config", {}))
            assert composed.get("endpoint") == sink.get("endpoint")
        for key, value in document["spec"].get("extensions", {}).items():
            assert json.dumps(rendered["extensions"][key]) == json.dumps(value)


def test_each_sink_gets_its_exporter_authenticator_and_secret_file() -> None:
    rendered = render(destinations())
    assert rendered is not None
    mimir = rendered["exporters"]["prometheusremotewrite/mimir"]
    assert mimir["auth"] == {"authenticator": "bearertokenauth/mimir"}
    assert rendered["extensions"]["bearertokenauth/mimir"] == {
        "filename": "/etc/tuneplane/telemetry/mimir/token"}
    assert "auth" not in rendered["exporters"]["debug/console"]
    service = rendered["service"]
    assert service["pipelines"]["metrics"]["receivers"] == ["otlp"]
    assert service["pipelines"]["metrics"]["exporters"] == list(rendered["exporters"])
    assert service["extensions"] == list(rendered["extensions"])


def test_renaming_a_sink_renames_everything_composed_for_it() -> None:
    document: dict[str, Any] = yaml.safe_load((GOLDEN / "prometheus.yaml").read_text())
    document["spec"]["sinks"][0]["name"] = "mimir-eu"
    rendered = render([parse(document)])
    assert rendered is not None
    assert list(rendered["exporters"]) == ["prometheusremotewrite/mimir-eu"]
    assert rendered["extensions"] == {"bearertokenauth/mimir-eu": {
        "filename": "/etc/tuneplane/telemetry/mimir-eu/token"}}


def test_no_destination_composes_nothing() -> None:
    assert render([]) is None


def sink_doc(name: str, sink: str) -> dict[str, Any]:
    return {"apiVersion": "tuneplane.dev/v1", "kind": "TelemetryDestination",
            "metadata": {"name": name}, "spec": {"sinks": [{"name": sink, "exporter": "debug"}]}}


def test_a_sink_name_is_unique_across_destinations() -> None:
    with pytest.raises(DestinationError, match="sink 'console' is already a sink of "
                                               "destination 'a'"):
        render([parse(sink_doc("a", "console")), parse(sink_doc("b", "console"))])


def test_an_extension_id_is_unique_across_destinations() -> None:
    a, b = sink_doc("a", "one"), sink_doc("b", "two")
    a["spec"]["extensions"] = b["spec"]["extensions"] = {"health_check": {}}
    with pytest.raises(DestinationError, match="extension 'health_check' is already declared"):
        render([parse(a), parse(b)])
