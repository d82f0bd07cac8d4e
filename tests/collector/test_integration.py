"""The integration artifact: schema-checked, one owner per source, clear errors."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.support.schemaserver import schema_server
from tuneplane.collector.channels import ChannelReader, ChannelSpec
from tuneplane.collector.integration import IntegrationError, load, parse
from tuneplane.collector.reader import SourceKind
from tuneplane.telemetry.v1.channelschema import SchemaRefused

YAML = """
version: 1
sources:
  - {id: train, kind: jsonl, path: /data/rank0.jsonl, owner: rank-0}
  - {id: train-1, kind: jsonl, path: /data/rank1.jsonl, owner: rank-1}
  - {id: tb, kind: tensorboard, path: /data/tb, owner: rank-0}
mappings:
  - {tag: train/loss, name: loss, goal: minimize, unit: nats}
  - {source: tb, tag: eval/acc, name: accuracy, goal: maximize, aggregate_owner: rank-0}
channels:
  - id: samples
    path: /data/samples.jsonl
    owner: rank-1
    schema: {type: object, required: [text], properties: {text: {type: string}}}
    max_record_bytes: 4096
    max_bytes_per_minute: 65536
"""


def document() -> dict[str, Any]:
    import yaml
    loaded: dict[str, Any] = yaml.safe_load(YAML)
    return loaded


def test_each_member_reads_only_what_it_owns(tmp_path: Path) -> None:
    path = tmp_path / "integration.yaml"
    path.write_text(YAML)
    artifact = load(path)
    assert [(s.source_id, s.kind) for s in artifact.sources_of("rank-0")] == [
        ("train", SourceKind.JSONL), ("tb", SourceKind.TENSORBOARD)]
    (train1, samples) = artifact.sources_of("rank-1")
    assert train1.source_id == "train-1"
    assert samples.kind is SourceKind.CHANNEL
    assert samples.channel is not None
    assert samples.channel.max_record_bytes == 4096
    assert artifact.sources_of("rank-7") == []
    assert [m.name for m in artifact.mappings] == ["loss", "accuracy"]
    assert artifact.mappings[1].aggregate_owner == "rank-0"


def test_json_works_too(tmp_path: Path) -> None:
    path = tmp_path / "integration.json"
    path.write_text(json.dumps(document()))
    assert len(load(path).sources) == 4


@pytest.mark.parametrize(("change", "message"), [
    (lambda d: d["sources"][0].pop("owner"), "must contain .*owner"),
    (lambda d: d["sources"][0].update(kind="csv"), r"artifact.sources\[0\].kind must be one of"),
    (lambda d: d.update(version=2), "artifact.version must be same as const definition: 1"),
    (lambda d: d["sources"][1].update(path="/data/rank0.jsonl"),
     "path /data/rank0.jsonl declared more than once"),
    (lambda d: d["sources"][1].update(id="train"), "id train declared more than once"),
    (lambda d: d["mappings"][1].update(source="nope"), r"mappings\[1\].source 'nope' is not"),
    (lambda d: d["channels"][0].update(max_record_bytes=0),
     r"max_record_bytes must be bigger than or equal to 1"),
    (lambda d: d["channels"][0].update(schema={"type": "no-such-type"}),
     r"channels\[0\].schema is not a usable JSON Schema"),
    (lambda d: d.update(extra=1), "must not contain {'extra'} properties"),
])
def test_bad_artifacts_are_refused_naming_the_place(change: Any, message: str) -> None:
    doc = document()
    change(doc)
    with pytest.raises(IntegrationError, match=message):
        parse(doc, "integration.yaml")


def test_unreadable_yaml_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "integration.yaml"
    path.write_text("sources: [unclosed")
    with pytest.raises(IntegrationError, match=f"{path}: not valid yaml"):
        load(path)


@pytest.mark.parametrize("scheme", ["http", "file"])
def test_a_channel_schema_ref_outside_it_is_refused_by_the_collector_and_not_fetched(
        tmp_path: Path, scheme: str) -> None:
    secret = tmp_path / "secret.json"
    secret.write_text('{"type": "integer"}')
    with schema_server() as server:
        ref = f"{server.url}/schema.json" if scheme == "http" else secret.as_uri()
        doc = document()
        doc["channels"][0]["schema"] = {"allOf": [{"$ref": ref}]}
        with pytest.raises(IntegrationError, match=re.escape(
                f"integration.yaml: channels[0].schema.allOf[0].$ref is {ref!r}: only local "
                "references (# or #/...) are allowed")):
            parse(doc, "integration.yaml")
        # A channel spec made without the artifact's check still compiles offline.
        with pytest.raises(SchemaRefused, match=re.escape(
                f"channel samples schema.allOf[0].$ref is {ref!r}")):
            ChannelReader(ChannelSpec("samples", tmp_path / "s.jsonl", {"allOf": [{"$ref": ref}]},
                                      64, 64), lambda: 0.0)
        assert server.fetched == []


def test_relative_source_paths_are_read_below_the_working_directory(tmp_path: Path) -> None:
    doc = document()
    doc["sources"][0]["path"] = "out/rank0.jsonl"
    doc["channels"][0]["path"] = "samples.jsonl"
    owned = parse(doc, "integration.yaml").sources_of("rank-0", tmp_path / "work")
    assert [(s.source_id, s.path) for s in owned] == [
        ("train", tmp_path / "work" / "out" / "rank0.jsonl"), ("tb", Path("/data/tb"))]
    (_, samples) = parse(doc, "integration.yaml").sources_of("rank-1", tmp_path / "work")
    assert samples.path == tmp_path / "work" / "samples.jsonl"
    assert samples.channel is not None
    assert samples.channel.path == samples.path
