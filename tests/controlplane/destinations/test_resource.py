"""TelemetryDestination validation: every error names the path of the bad field."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tuneplane.controlplane.destinations.resource import DestinationError, parse

VALID: dict[str, Any] = {
    "apiVersion": "tuneplane.dev/v1", "kind": "TelemetryDestination",
    "metadata": {"name": "prod"},
    "spec": {"sinks": [{"name": "gw", "exporter": "otlphttp",
                        "endpoint": "https://otel.example:4318",
                        "secretRef": {"name": "gw-token"},
                        "auth": {"bearerToken": {"key": "token"}},
                        "config": {"compression": "gzip"}}]}}


def changed(path: list[str | int], value: Any) -> dict[str, Any]:
    document = copy.deepcopy(VALID)
    node: Any = document
    for key in path[:-1]:
        node = node[key]
    if value is KeyError:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return document


def test_a_valid_destination_parses() -> None:
    destination = parse(VALID)
    (sink,) = destination.sinks
    assert (sink.exporter_id, sink.authenticator_id, sink.secret_dir()) == (
        "otlphttp/gw", "bearertokenauth/gw", "/etc/tuneplane/telemetry/gw")
    assert sink.config == {"compression": "gzip"}


@pytest.mark.parametrize(("path", "value", "words"), [
    (["apiVersion"], "v1", "apiVersion: must be same as const definition"),
    (["kind"], "Destination", "kind: must be same as const definition"),
    (["metadata", "name"], "Prod_1", "metadata.name: must match pattern"),
    (["metadata"], KeyError, "(document): must contain ['metadata'] properties"),
    (["spec", "sinks"], [], "spec.sinks: must contain at least 1 items"),
    (["spec", "sinks", 0, "name"], "GW", "spec.sinks[0].name: must match pattern"),
    (["spec", "sinks", 0, "exporter"], "OTLP http", "spec.sinks[0].exporter: must match"),
    (["spec", "sinks", 0, "endpoint"], "ftp://x:1", "spec.sinks[0].endpoint: 'ftp://x:1' is "
                                                    "not an http(s) URL"),
    (["spec", "sinks", 0, "endpoint"], "otel.example", "spec.sinks[0].endpoint: "
                                                       "'otel.example' is neither"),
    (["spec", "sinks", 0, "endpoint"], "https://otel:99999", "spec.sinks[0].endpoint:"),
    (["spec", "sinks", 0, "secretRef"], KeyError, "spec.sinks[0].auth.bearerToken: needs "
                                                  "spec.sinks[0].secretRef"),
    (["spec", "sinks", 0, "auth", "bearerToken", "key"], "a b",
     "spec.sinks[0].auth.bearerToken.key: must match pattern"),
    (["spec", "sinks", 0, "auth", "basic"], {}, "spec.sinks[0].auth: must not contain"),
    (["spec", "sinks", 0, "config", "endpoint"], "x", "spec.sinks[0].config.endpoint: set by "
                                                      "spec.sinks[0].endpoint"),
    (["spec", "sinks", 0, "config", "auth"], {}, "spec.sinks[0].config.auth: set by"),
    (["spec", "sinks", 0, "config"], "gzip", "spec.sinks[0].config: must be object"),
    (["spec", "extensions"], {"Bad Id": {}}, "spec.extensions.Bad Id: not an OpenTelemetry"),
    (["spec", "extensions"], {"bearertokenauth/gw": {}}, "spec.extensions.bearertokenauth/gw: "
                                                         "composed for sink 'gw'"),
    (["spec", "surprise"], 1, "spec: must not contain {'surprise'}"),
])
def test_each_mistake_names_its_path(path: list[str | int], value: Any, words: str) -> None:
    with pytest.raises(DestinationError) as caught:
        parse(changed(path, value), "prod.yaml")
    assert str(caught.value).startswith("prod.yaml: ")
    assert words in str(caught.value), str(caught.value)


def test_sink_names_are_unique_within_a_destination() -> None:
    document = copy.deepcopy(VALID)
    document["spec"]["sinks"].append({"name": "gw", "exporter": "debug"})
    with pytest.raises(DestinationError, match=r"spec.sinks\[1\].name: 'gw' is already the "
                                               r"name of spec.sinks\[0\]"):
        parse(document)


@pytest.mark.parametrize("endpoint", ["https://otel.example", "http://10.0.0.1:4318/v1",
                                      "otel-gateway:4317", "[::1]:4317"])
def test_endpoints_that_parse_are_accepted(endpoint: str) -> None:
    assert parse(changed(["spec", "sinks", 0, "endpoint"], endpoint)).sinks[0].endpoint == \
        endpoint
