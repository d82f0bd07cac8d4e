"""The TelemetryDestination CustomResourceDefinition, made from the resource's JSON Schema
(``destination-v1.json``), so the API server and ``tuneplane destinations apply`` check the
same typed fields. ``python -m tuneplane.exporter.kube.crd`` prints it; the chart's copy
(``deploy/helm/tuneplane/crds/``) is checked against it by the tests.

Cluster-scoped: a destination exports the telemetry of every project and tenant, so
creating one is a cluster administrator's act; a namespaced kind would let whoever may
create objects in any namespace send the whole fleet's curves away. A release composes
only those labelled for it (``scope``: ``tuneplane.dev/release``). The Secrets a sink's
``secretRef`` names are in that release's namespace, where the collector runs, and start
with its sink prefix (``tuneplane-sink-``); the webhook and the controller check that.

The schema is structural: ``$ref`` inlined, ``const`` an enum, ``config`` and
``spec.extensions`` kept whole (``x-kubernetes-preserve-unknown-fields``). CEL rules say
what fits them (sink names unique, a bearer token's secret; their cost is bounded by the
schema's maxItems and maxLength); the admission webhook
(``webhook``) says the rest, with the same code as the API resource.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from tuneplane.destinations.resource import API_VERSION, KIND, SCHEMA

GROUP, VERSION = API_VERSION.split("/")
PLURAL, SINGULAR = "telemetrydestinations", "telemetrydestination"
#: Rules on a sink, and on the list of sinks.
SINK_RULES = [{"rule": "!has(self.auth) || !has(self.auth.bearerToken) || has(self.secretRef)",
               "message": "auth.bearerToken needs secretRef, the secret holding the token",
               "fieldPath": ".auth.bearerToken", "reason": "FieldValueRequired"}]
SINKS_RULES = [{"rule": "self.all(s, self.exists_one(t, t.name == s.name))",
                "message": "sink names must be unique", "reason": "FieldValueDuplicate"}]
CONDITION = {"type": "object", "required": ["type", "status"], "properties": {
    "type": {"type": "string"}, "status": {"type": "string"},
    "reason": {"type": "string"}, "message": {"type": "string"},
    "observedGeneration": {"type": "integer"},
    "lastTransitionTime": {"type": "string", "format": "date-time"}}}


def schema() -> dict[str, Any]:
    return SCHEMA


def structural(node: Any, defs: dict[str, Any]) -> Any:
    """A JSON Schema node as a structural OpenAPI v3 schema."""
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        return structural(defs[node["$ref"].rsplit("/", 1)[1]], defs)
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in ("$schema", "$defs", "title", "additionalProperties"):
            continue
        if key == "const":
            out["type"], out["enum"] = "string", [value]
        elif key == "properties":
            out[key] = {name: structural(child, defs) for name, child in value.items()}
        elif key == "items":
            out[key] = structural(value, defs)
        else:
            out[key] = value
    if out.get("type") == "object" and "properties" not in out:
        out["x-kubernetes-preserve-unknown-fields"] = True
    return out


def spec_schema() -> dict[str, Any]:
    loaded = schema()
    spec = structural(loaded["properties"]["spec"], loaded["$defs"])
    sinks = spec["properties"]["sinks"]
    sinks["x-kubernetes-validations"] = SINKS_RULES
    sinks["items"]["x-kubernetes-validations"] = SINK_RULES
    return dict(spec)


def definition() -> dict[str, Any]:
    status = {"type": "object", "properties": {
        "observedGeneration": {"type": "integer"},
        "conditions": {"type": "array", "items": CONDITION,
                       "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]}}}
    columns = [
        {"name": "Ready", "type": "string",
         "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"},
        {"name": "Reason", "type": "string",
         "jsonPath": ".status.conditions[?(@.type==\"Ready\")].reason"},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{PLURAL}.{GROUP}"},
        "spec": {
            "group": GROUP, "scope": "Cluster",
            "names": {"kind": KIND, "plural": PLURAL, "singular": SINGULAR,
                      "listKind": f"{KIND}List", "shortNames": ["tdest"]},
            "versions": [{
                "name": VERSION, "served": True, "storage": True,
                "subresources": {"status": {}}, "additionalPrinterColumns": columns,
                "schema": {"openAPIV3Schema": {
                    "type": "object", "description": schema()["description"],
                    "required": ["spec"],
                    "properties": {"spec": spec_schema(), "status": status}}}}]}}


def main() -> int:
    sys.stdout.write("# Made by `python -m tuneplane.exporter.kube.crd`; do not edit.\n")
    sys.stdout.write(json.dumps(definition(), indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
