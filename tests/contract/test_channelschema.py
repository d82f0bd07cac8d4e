"""A channel schema's $ref stays inside it: remote and file references are refused, and
schemas compile with nothing fetched, whatever fastjsonschema would otherwise do."""

from __future__ import annotations

import json
import re
from pathlib import Path

import fastjsonschema
import pytest

from tests.support.schemaserver import schema_server
from tuneplane.telemetry.v1.channelschema import (
    MAX_DEPTH,
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


def nested(depth: int, inner: dict[str, object]) -> dict[str, object]:
    schema = inner
    for _ in range(depth):
        schema = {"type": "array", "items": schema}
    return schema


def test_a_deep_schema_is_refused_without_exhausting_the_stack_or_the_compiler() -> None:
    """Python cannot compile fastjsonschema's code for ~24 levels of items; 5000 would
    exhaust the stack of a recursive walk."""
    with pytest.raises(SchemaRefused, match=re.escape(
            f"channel{'.items' * 21} is nested deeper than {MAX_DEPTH} levels")):
        compile_offline(nested(5000, {"$ref": "http://x.invalid/deep.json"}), "channel")
    with pytest.raises(SchemaRefused, match="nested deeper"):
        compile_offline(nested(30, {}), "channel")
    value: object = 1
    for _ in range(MAX_DEPTH):
        value = [value]
    compile_offline(nested(MAX_DEPTH, {"type": "integer"}), "channel")(value)  # the deepest


@pytest.mark.parametrize(("schema", "words"), [
    ({"type": "string", "pattern": "(unclosed"}, "error: missing ), unterminated subpattern"),
    ({"patternProperties": {"[": {}}}, "error: unterminated character set"),
    ({"type": "string", "minLength": "1"}, "minLength must be a number"),
])
def test_a_schema_that_does_not_compile_is_refused_with_the_reason(
        schema: dict[str, object], words: str) -> None:
    with pytest.raises(SchemaRefused, match=re.escape(
            "channel is not a usable JSON Schema: ") + ".*" + re.escape(words)):
        compile_offline(schema, "channel")
