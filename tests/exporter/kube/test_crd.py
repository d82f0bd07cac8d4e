"""The TelemetryDestination CRD: made from the resource's JSON Schema, the chart's copy is
current, the schema is structural, and its CEL rules sit where their messages say."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tuneplane.exporter.kube import crd

CHART_COPY = Path(__file__).resolve().parents[3] / "deploy" / "helm" / "tuneplane" / "crds" \
    / "telemetrydestinations.yaml"


def walk(node: Any) -> list[dict[str, Any]]:
    found = []
    if isinstance(node, dict):
        found.append(node)
        for value in node.values():
            found += walk(value)
    elif isinstance(node, list):
        for value in node:
            found += walk(value)
    return found


def test_the_charts_copy_is_what_the_schema_makes() -> None:
    text = CHART_COPY.read_text()
    assert text.startswith("# Made by `python -m tuneplane.exporter.kube.crd`")
    assert json.loads(text.split("\n", 1)[1]) == crd.definition()


def test_it_is_cluster_scoped_with_a_status_subresource() -> None:
    spec = crd.definition()["spec"]
    assert spec["scope"] == "Cluster"
    (version,) = spec["versions"]
    assert version["name"] == "v1"
    assert version["subresources"] == {"status": {}}


def test_the_schema_is_structural_and_passthrough_is_kept_whole() -> None:
    schema = crd.spec_schema()
    for node in walk(schema):
        assert not {"$ref", "$defs", "additionalProperties", "const"} & set(node)
    sink = schema["properties"]["sinks"]["items"]["properties"]
    assert sink["config"] == {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    assert schema["properties"]["extensions"]["x-kubernetes-preserve-unknown-fields"]
    # Bounded, so the CEL rules' estimated cost is.
    assert schema["properties"]["sinks"]["maxItems"] == 64
    assert sink["name"]["maxLength"] == 63


def test_the_typed_fields_are_the_json_schemas() -> None:
    loaded = crd.schema()
    sink = loaded["properties"]["spec"]["properties"]["sinks"]["items"]["properties"]
    made = crd.spec_schema()["properties"]["sinks"]["items"]["properties"]
    assert set(made) == set(sink)
    assert made["exporter"] == sink["exporter"]
    assert made["endpoint"] == sink["endpoint"]
    assert made["name"] == loaded["$defs"]["dnsLabel"]


def test_the_cel_rules_are_on_the_sinks() -> None:
    sinks = crd.spec_schema()["properties"]["sinks"]
    assert [r["rule"] for r in sinks["x-kubernetes-validations"]] == [
        "self.all(s, self.exists_one(t, t.name == s.name))"]
    (rule,) = sinks["items"]["x-kubernetes-validations"]
    assert rule["fieldPath"] == ".auth.bearerToken"
    assert "has(self.secretRef)" in rule["rule"]
