"""The contract's check of an integration artifact (what run creation calls): names are
names, channel schemas hold only local references."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tuneplane.telemetry.v1.integration import IntegrationError, check_document
from tuneplane.telemetry.v1.names import NAME, NAME_PATTERN, is_name


def artifact(**changes: Any) -> dict[str, Any]:
    return {"version": 1,
            "sources": [{"id": "train", "kind": "jsonl", "path": "m.jsonl", "owner": "rank-0"}],
            "channels": [{"id": "samples", "path": "s.jsonl", "owner": "rank-1",
                          "schema": {"type": "object"}, "max_record_bytes": 64,
                          "max_bytes_per_minute": 64}], **changes}


def refused(document: dict[str, Any], words: str) -> None:
    with pytest.raises(IntegrationError, match=re.escape(words)):
        check_document(document, "run r1 artifact")


@pytest.mark.parametrize("ref", ["http://169.254.169.254/latest/meta-data",
                                 "file:///var/lib/tuneplane/node/node.json"])
def test_a_ref_outside_the_schema_is_refused_where_it_is(ref: str) -> None:
    doc = artifact()
    doc["channels"][0]["schema"] = {"properties": {"text": {"$ref": ref}}}
    refused(doc, f"run r1 artifact: channels[0].schema.properties.text.$ref is {ref!r}: only "
                 "local references (# or #/...) are allowed in a channel schema; nothing is "
                 "fetched")


@pytest.mark.parametrize(("group", "field", "value"), [
    ("sources", "owner", "../../x"), ("sources", "owner", "/etc"), ("sources", "owner", ""),
    ("sources", "owner", "rank 0"), ("sources", "owner", "a" * 129),
    ("channels", "owner", "../x"), ("sources", "id", "tb/../x"), ("channels", "id", ".hidden"),
])
def test_owners_and_ids_are_names(group: str, field: str, value: str) -> None:
    doc = artifact()
    doc[group][0][field] = value
    refused(doc, f"run r1 artifact: artifact.{group}[0].{field} {value!r} is not a name: "
                 "1-128 of A-Z a-z 0-9 . _ - (starting with a letter or digit)")


def test_a_final_newline_does_not_make_a_name() -> None:
    doc = artifact()
    doc["sources"][0]["owner"] = "rank-0\n"
    with pytest.raises(IntegrationError, match="is not a name"):
        check_document(doc, "a")
    assert not is_name("rank-0\n")
    assert is_name("rank-0")
    assert is_name("r.1_x-" + "a" * 122)


def test_a_channel_schema_too_deep_to_compile_is_refused_at_check_time() -> None:
    doc = artifact()
    schema: dict[str, Any] = {}
    for _ in range(40):
        schema = {"items": schema}
    doc["channels"][0]["schema"] = schema
    refused(doc, "run r1 artifact: channels[0].schema.items.items")
    refused(doc, "is nested deeper than 20 levels of objects and arrays")


def test_a_path_with_a_nul_is_refused() -> None:
    doc = artifact()
    doc["sources"][0]["path"] = "m\0.jsonl"
    refused(doc, "run r1 artifact: sources[0].path holds a NUL character")


def test_the_schema_states_the_same_name_rule() -> None:
    assert NAME.pattern == NAME_PATTERN.strip("^$")
    assert check_document(artifact(), "a") == []  # and a good artifact passes


def test_an_artifact_may_say_how_a_ranks_member_is_named() -> None:
    from tuneplane.telemetry.v1.integration import RANK_MEMBER, rank_member
    plain: dict[str, Any] = {"version": 1, "sources": [
        {"id": "a", "kind": "jsonl", "path": "a.jsonl", "owner": "rank-0"}]}
    check_document(plain, "plain")
    assert rank_member(plain) == RANK_MEMBER == "rank-{rank}"
    named = {**plain, "members": {"rank": "gpu.{rank}-of-8"}}
    check_document(named, "named")
    assert rank_member(named) == "gpu.{rank}-of-8"
    for template, words in ((".w{rank}", "does not make names"),
                            ("worker", "must match pattern"),
                            ("w{rank}{rank}", "must match pattern"),
                            ("w/{rank}", "must match pattern")):
        with pytest.raises(IntegrationError, match=words):
            check_document({**plain, "members": {"rank": template}}, "artifact.yaml")


def test_a_static_config_is_flattened_and_each_setting_must_be_one_a_batch_takes() -> None:
    from tuneplane.telemetry.v1.config import static_config
    config = {"optimizer": {"name": "adam", "lr": 1e-3, "betas": [0.9, 0.999]}, "seed": 7,
              "amp": True, "note": None, "when": "2024-01-01"}
    check_document(artifact(config=config), "a")
    assert static_config(artifact(config=config)) == {
        "optimizer.name": "adam", "optimizer.lr": 0.001, "optimizer.betas": "[0.9,0.999]",
        "seed": 7.0, "amp": True, "when": "2024-01-01"}
    assert static_config(artifact()) == {}
    for bad, words in (
            ({"lr": float("nan")}, "config 'lr' is nan, not a finite number"),
            ({"a": {"b": "x" * 4097}},
             "config 'a.b' is a text of 4097 bytes, over the 4096 byte bound"),
            ({"a\tb": 1}, "config key holds the control character '\\t' at 1"),
            ({"t": "a\0b"}, "config 't' is a text holding a NUL character"),
            ({f"k{n}": n for n in range(1001)}, "config declares 1001 keys, over the 1000 bound"),
            ([1], "artifact.config must be object")):
        refused(artifact(config=bad), f"run r1 artifact: {words}")
