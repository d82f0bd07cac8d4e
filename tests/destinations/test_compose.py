"""Composition of destinations into one OpenTelemetry Collector configuration: golden
output for several destinations using every field, passthrough kept exactly."""

from __future__ import annotations

import json
import posixpath
from pathlib import Path
from typing import Any

import pytest
import yaml

from tuneplane.destinations.compose import dumps, render
from tuneplane.destinations.resource import Destination, DestinationError, parse

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


def in_directory(node: Any, component: str, directory: str, key: str = "") -> Any:
    """What the golden's file fields become: paths in the sink's directory."""
    if isinstance(node, dict):
        return {k: in_directory(v, component, directory, k) for k, v in node.items()}
    if key in ("ca_file", "directory") or (key == "path" and component == "file"):
        return posixpath.normpath(f"{directory}/{node}")
    return node


def test_config_and_extensions_pass_through_but_for_file_fields() -> None:
    rendered = render(destinations())
    assert rendered is not None
    for path in sorted(GOLDEN.glob("*.yaml")):
        document = yaml.safe_load(path.read_text())
        for sink in document["spec"]["sinks"]:
            exporter = dict(rendered["exporters"][f"{sink['exporter']}/{sink['name']}"])
            composed = {k: exporter.pop(k) for k in ("endpoint", "auth")
                        if k in exporter and k not in sink.get("config", {})}
            expected = in_directory(sink.get("config", {}), sink["exporter"],
                                    f"/etc/tuneplane/telemetry/{sink['name']}")
            assert json.dumps(exporter) == json.dumps(expected)
            assert composed.get("endpoint") == sink.get("endpoint")
        for key, value in document["spec"].get("extensions", {}).items():
            owner = key.partition("/")[2]
            assert json.dumps(rendered["extensions"][key]) == json.dumps(
                in_directory(value, key.partition("/")[0], f"/etc/tuneplane/telemetry/{owner}"))
    assert rendered["exporters"]["prometheusremotewrite/mimir"]["tls"]["ca_file"] == \
        "/etc/tuneplane/telemetry/mimir/ca.pem"
    assert rendered["exporters"]["file/lake-file"]["path"] == \
        "/etc/tuneplane/telemetry/lake-file/metrics.jsonl"
    assert rendered["extensions"]["file_storage/datadog-gw"] == {
        "directory": "/etc/tuneplane/telemetry/datadog-gw/queue",
        "compaction": {"directory": "/etc/tuneplane/telemetry/datadog-gw/compaction"}}
    assert rendered["exporters"]["kafka/kafka-lake"]["auth"]["sasl"]["password"] == "pa$$word"


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


@pytest.mark.parametrize(("config", "words"), [
    ({"auth": {"authenticator": "oauth2client/corp"}},
     r"spec.sinks\[0\].config.auth.authenticator: 'oauth2client/corp' is an extension of "
     r"destination 'a'; a destination names only its own"),
    ({"headers_from": ["bearertokenauth/one"]},
     r"spec.sinks\[0\].config.headers_from\[0\]: 'bearertokenauth/one' is an extension of "
     r"destination 'a'"),
    # The collector trims the spaces around a component id's type and name.
    ({"auth": {"authenticator": "bearertokenauth/one "}},
     r"spec.sinks\[0\].config.auth.authenticator: 'bearertokenauth/one ' is an extension of "
     r"destination 'a'"),
    ({"auth": {"authenticator": " bearertokenauth / one"}},
     r"spec.sinks\[0\].config.auth.authenticator: ' bearertokenauth / one' is an extension "
     r"of destination 'a'"),
    ({"auth": {"authenticator": "oauth2client /\u3000corp"}},  # an ideographic space
     r"spec.sinks\[0\].config.auth.authenticator: 'oauth2client /\\u3000corp' is an "
     r"extension of destination 'a'"),
])
def test_a_destination_names_no_other_destinations_extension_or_authenticator(
        config: dict[str, Any], words: str) -> None:
    a, b = sink_doc("a", "one"), sink_doc("b", "two")
    a["spec"]["sinks"][0] |= {"secretRef": {"name": "s"}, "auth": {"bearerToken": {"key": "t"}}}
    a["spec"]["extensions"] = {"oauth2client/corp": {"client_id": "tuneplane"}}
    b["spec"]["sinks"][0]["config"] = config
    with pytest.raises(DestinationError, match=f"destination 'b': {words}"):
        render([parse(a), parse(b)])


def test_an_extension_is_not_named_for_another_destinations_sink() -> None:
    a, b = sink_doc("a", "one"), sink_doc("b", "two")
    b["spec"]["extensions"] = {"bearertokenauth/one": {"token": "t"}}
    with pytest.raises(DestinationError, match="destination 'b': extension 'bearertokenauth/one' "
                                               "is named for sink 'one' of destination 'a'"):
        render([parse(a), parse(b)])


def test_file_fields_are_composed_in_the_sinks_directory_under_the_root_given() -> None:
    a = sink_doc("a", "one")
    a["spec"]["sinks"][0] |= {"exporter": "file", "config": {"path": "out/metrics.jsonl"}}
    rendered = render([parse(a)], secrets_root="/srv/secrets")
    assert rendered is not None
    assert rendered["exporters"]["file/one"]["path"] == "/srv/secrets/one/out/metrics.jsonl"


def test_a_value_naming_the_secrets_root_composed_with_is_refused() -> None:
    a = sink_doc("a", "one")
    a["spec"]["sinks"][0]["config"] = {"token_source": "/srv/secrets/two/token"}
    with pytest.raises(DestinationError, match=r"destination 'a': spec.sinks\[0\].config."
                                               r"token_source: names the secrets root "
                                               r"\(/srv/secrets\)"):
        render([parse(a)], secrets_root="/srv/secrets")
