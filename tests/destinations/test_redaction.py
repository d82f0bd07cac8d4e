"""What answers show of destinations: secret values redacted, the rest (file names,
extension ids, the resource's own fields) as stored; what is composed is not redacted."""

from __future__ import annotations

import copy
from typing import Any

from tuneplane.destinations import redaction
from tuneplane.destinations.compose import render
from tuneplane.destinations.redaction import MARK
from tuneplane.destinations.resource import parse

STORED: dict[str, Any] = {
    "apiVersion": "tuneplane.dev/v1", "kind": "TelemetryDestination",
    "metadata": {"name": "prod", "generation": 3},
    "spec": {"sinks": [
        {"name": "gw", "exporter": "otlphttp", "endpoint": "https://user:pw@otel.example:4318",
         "secretRef": {"name": "gw-token"}, "auth": {"bearerToken": {"key": "token"}},
         "config": {"headers": {"X-Scope-OrgID": "training", "DD-API-KEY": "k1"},
                    "tls": {"ca_file": "ca.pem", "key_pem": "-----BEGIN PRIVATE KEY-----"},
                    "compression": "gzip", "proxy_url": "http://proxy:pw@proxy.example:3128"}},
        {"name": "lake", "exporter": "kafka",
         "config": {"auth": {"sasl": {"username": "tuneplane", "password": "pa$$word"}},
                    "api": {"key": "k2"}, "topic": "metrics", "timeout": None}}],
        "extensions": {"oauth2client/gw": {"client_id": "tuneplane", "client_secret": "s3",
                                           "client_secret_file": "client-secret",
                                           "token_url": "https://sso.example/token"},
                       "bearertokenauth/corp": {"token": "t0", "scheme": "Bearer"}}}}


def test_a_stored_destination_is_answered_with_its_secrets_redacted() -> None:
    shown = redaction.document(STORED)
    gw, lake = shown["spec"]["sinks"]
    assert gw["endpoint"] == f"https://{MARK}@otel.example:4318"
    assert gw["config"] == {"headers": {"X-Scope-OrgID": MARK, "DD-API-KEY": MARK},
                            "tls": {"ca_file": "ca.pem", "key_pem": MARK},
                            "compression": "gzip",
                            "proxy_url": f"http://{MARK}@proxy.example:3128"}
    assert gw["auth"] == {"bearerToken": {"key": "token"}}  # a file's name, not a secret
    assert lake["config"] == {"auth": {"sasl": {"username": "tuneplane", "password": MARK}},
                              "api": {"key": MARK}, "topic": "metrics", "timeout": None}
    assert shown["spec"]["extensions"] == {
        "oauth2client/gw": {"client_id": "tuneplane", "client_secret": MARK,
                            "client_secret_file": "client-secret",
                            "token_url": "https://sso.example/token"},
        "bearertokenauth/corp": {"token": MARK, "scheme": "Bearer"}}
    assert shown["metadata"] == STORED["metadata"]


def test_redacting_leaves_the_stored_document_alone() -> None:
    before = copy.deepcopy(STORED)
    redaction.document(STORED)
    assert before == STORED


def test_the_composed_configuration_is_answered_redacted_and_composed_whole() -> None:
    document = copy.deepcopy(STORED)
    document["spec"]["sinks"][0]["endpoint"] = "https://otel.example:4318"
    composed = render([parse(document)])
    assert composed is not None
    assert composed["exporters"]["kafka/lake"]["auth"]["sasl"]["password"] == "pa$$word"
    shown = redaction.config(composed)
    assert shown is not None
    assert shown["exporters"]["kafka/lake"]["auth"]["sasl"]["password"] == MARK
    assert shown["exporters"]["otlphttp/gw"]["auth"] == {"authenticator": "bearertokenauth/gw"}
    assert shown["extensions"]["bearertokenauth/gw"] == {
        "filename": "/etc/tuneplane/telemetry/gw/token"}
    assert shown["extensions"]["bearertokenauth/corp"]["token"] == MARK
    assert shown["service"] == composed["service"]
    assert shown["receivers"] == composed["receivers"]
    assert redaction.config(None) is None
