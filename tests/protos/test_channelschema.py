"""A channel schema's $ref stays inside it: remote and file references are refused, and
schemas compile with nothing fetched, whatever fastjsonschema would otherwise do."""

from __future__ import annotations

import json
from pathlib import Path

import fastjsonschema
import pytest

from tests.support.schemaserver import schema_server
from tuneplane.telemetry.v1.channelschema import (
    NoFetching,
    SchemaRefused,
    compile_offline,
    foreign_refs,
)


def test_fastjsonschema_alone_fetches_a_remote_ref_and_reads_a_file_ref(tmp_path: Path) -> None:
    """What the module guards against is real: both are followed by default."""
    local = tmp_path / "secret.json"
    local.write_text(json.dumps({"type": "integer"}))
    with schema_server() as server:
        validate = fastjsonschema.compile({"$ref": f"{server.url}/remote.json"})
        assert server.fetched == ["/remote.json"]
    with pytest.raises(fastjsonschema.JsonSchemaValueException, match="must be integer"):
        validate("text")
    with pytest.raises(fastjsonschema.JsonSchemaValueException, match="must be integer"):
        fastjsonschema.compile({"$ref": local.as_uri()})("text")


def test_remote_and_file_refs_are_refused_naming_their_place_and_nothing_is_fetched(
        tmp_path: Path) -> None:
    with schema_server() as server:
        for schema, words in (
                ({"properties": {"a": {"$ref": f"{server.url}/a.json"}}},
                 f"channel.properties.a.$ref is '{server.url}/a.json': only local references"),
                ({"allOf": [{"type": "object"}, {"$ref": (tmp_path / "x.json").as_uri()}]},
                 "channel.allOf[1].$ref is 'file://"),
                ({"$ref": "other.json#/definitions/a"}, "channel.$ref is 'other.json#/"),
                ({"items": {"$ref": "#anchor"}}, "channel.items.$ref is '#anchor'"),
                ({"not": {"$ref": 7}}, "channel.not.$ref is 7")):
            with pytest.raises(SchemaRefused, match=words.replace("$", r"\$").replace(
                    "[", r"\[").replace("]", r"\]")):
                compile_offline(schema, "channel")
        assert server.fetched == []


def test_a_remote_ref_that_reaches_the_compiler_is_refused_by_its_handlers() -> None:
    with schema_server() as server:
        with pytest.raises(fastjsonschema.JsonSchemaDefinitionException,
                           match="would be fetched; channel schemas are compiled offline"):
            fastjsonschema.compile({"$ref": f"{server.url}/a.json"}, handlers=NoFetching())
        with pytest.raises(fastjsonschema.JsonSchemaDefinitionException,
                           match="would be fetched"):
            fastjsonschema.compile({"$ref": "file:///etc/passwd"}, handlers=NoFetching())
        assert server.fetched == []


def test_local_refs_compile_and_the_schema_is_left_as_written() -> None:
    schema = {"$id": "https://example.invalid/s.json", "type": "object",
              "properties": {"a": {"$ref": "#/definitions/n"}, "b": {"$ref": "#"}},
              "definitions": {"n": {"type": "integer"}}}
    written = json.dumps(schema)
    validate = compile_offline(schema, "channel")
    validate({"a": 1, "b": {"a": 2}})
    with pytest.raises(fastjsonschema.JsonSchemaValueException):
        validate({"a": "x"})
    assert json.dumps(schema) == written  # compiling a copy: the data is not rewritten
    assert list(foreign_refs(schema)) == []
    compile_offline(schema, "channel")  # so it compiles again, unchanged


def test_a_deep_schema_is_walked_without_exhausting_the_stack() -> None:
    schema: dict[str, object] = {"$ref": "http://x.invalid/deep.json"}
    for _ in range(5000):
        schema = {"items": schema}
    ((place, ref),) = foreign_refs(schema)
    assert place == ".items" * 5000 + ".$ref"
    assert ref == "'http://x.invalid/deep.json'"
