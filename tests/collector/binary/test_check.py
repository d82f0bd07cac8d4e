"""The binary's ``check`` of an integration artifact: who reads what, or why the artifact is
refused, naming the file and the place; a channel schema reaching outside itself is
refused and nothing is fetched. On both targets (aarch64 under qemu)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.collector_binary import HOST_TARGET, TARGETS, run, unreachable_run
from tests.support.schemaserver import schema_server

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
    loaded: dict[str, Any] = yaml.safe_load(YAML)
    return loaded


@pytest.mark.parametrize("target", TARGETS)
def test_check_lists_each_source_with_its_owner(target: str, tmp_path: Path) -> None:
    for path, text in ((tmp_path / "i.yaml", YAML), (tmp_path / "i.json", json.dumps(document()))):
        path.write_text(text)
        done = run(target, "check", str(path))
        assert done.returncode == 0, done.stderr
        assert done.stdout.decode().splitlines() == [
            "rank-0\tjsonl\ttrain\t/data/rank0.jsonl", "rank-1\tjsonl\ttrain-1\t/data/rank1.jsonl",
            "rank-0\ttensorboard\ttb\t/data/tb", "rank-1\tchannel\tsamples\t/data/samples.jsonl"]
        assert done.stderr == b"4 sources and channels, 2 mappings: valid\n"


Change = Callable[[dict[str, Any]], object]
REFUSED: list[tuple[Change, str]] = [
    (lambda d: d["sources"][0].pop("owner"), "artifact.sources[0] \"owner\" is a required"),
    (lambda d: d["sources"][0].update(kind="csv"), "artifact.sources[0].kind \"csv\" is not one"),
    (lambda d: d.update(version=2), "artifact.version 1 was expected"),
    (lambda d: d["sources"][1].update(path="/data/rank0.jsonl"),
     "path /data/rank0.jsonl declared more than once"),
    (lambda d: d["sources"][1].update(id="train"), "id train declared more than once"),
    (lambda d: d["sources"][1].update(owner="../etc"), "artifact.sources[1].owner \"../etc\""),
    (lambda d: d["mappings"][1].update(source="nope"), "mappings[1].source 'nope' is not"),
    (lambda d: d["mappings"][1].update(source="train", run_path="eval"),
     "source 'train' is jsonl, and only TensorBoard sources have runs"),
    (lambda d: d["mappings"].append(d["mappings"][0]), "maps tag 'train/loss' of any source"),
    (lambda d: d["channels"][0].update(max_record_bytes=0), "max_record_bytes 0 is less than"),
    (lambda d: d["channels"][0].update(schema={"type": "no-such-type"}),
     "channels[0].schema is not a usable JSON Schema"),
    (lambda d: d.update(extra=1), "Additional properties are not allowed ('extra'"),
    (lambda d: d.update(sources=[], mappings=[]), "artifact.sources [] has less than 1 item"),
    (lambda d: d.update(members={"rank": "{rank}/x"}), "artifact.members.rank"),
    (lambda d: d.update(config=[1]), "artifact.config [1] is not of type \"object\""),
    (lambda d: d.update(config={"opt": {"lr": "x" * 4097}}),
     "config 'opt.lr' is a text of 4097 bytes, over the 4096 byte bound"),
    (lambda d: d.update(config={"": 1}), "config key is empty"),
]


@pytest.mark.parametrize(("change", "message"), REFUSED)
def test_bad_artifacts_are_refused_naming_the_place(tmp_path: Path, change: Change,
                                                    message: str) -> None:
    doc = document()
    change(doc)
    path = tmp_path / "integration.json"
    path.write_text(json.dumps(doc))
    done = run("x86_64-unknown-linux-musl", "check", str(path))
    assert done.returncode == 1
    said = done.stderr.decode()
    assert said.startswith(f"tuneplane-collector check: {path}: "), said
    assert message in said, said


def test_a_static_config_is_counted(tmp_path: Path) -> None:
    path = tmp_path / "integration.yaml"
    path.write_text(YAML + "config: {optimizer: {lr: 0.1, name: adam}, layers: [64, 32]}\n")
    done = run(HOST_TARGET, "check", str(path))
    assert done.returncode == 0, done.stderr
    assert done.stderr == b"4 sources and channels, 2 mappings, 3 config keys: valid\n"


def test_unreadable_yaml_and_missing_files_name_the_file(tmp_path: Path) -> None:
    path = tmp_path / "integration.yaml"
    path.write_text("sources: [unclosed")
    done = run("x86_64-unknown-linux-musl", "check", str(path))
    assert done.returncode == 1
    assert f"{path}: not valid YAML" in done.stderr.decode()
    missing = run("x86_64-unknown-linux-musl", "check", str(tmp_path / "none.yaml"))
    assert f"{tmp_path / 'none.yaml'}: cannot read: No such file" in missing.stderr.decode()


@pytest.mark.parametrize("scheme", ["http", "file"])
def test_a_channel_schema_ref_outside_it_is_refused_and_not_fetched(tmp_path: Path,
                                                                    scheme: str) -> None:
    secret = tmp_path / "secret.json"
    secret.write_text('{"type": "integer"}')
    deep: dict[str, Any] = {}
    for _ in range(30):
        deep = {"items": deep}
    with schema_server() as server:
        ref = f"{server.url}/schema.json" if scheme == "http" else secret.as_uri()
        for schema, message in (
                ({"allOf": [{"$ref": ref}]},
                 f"channels[0].schema.allOf[0].$ref is '{ref}': only local references"),
                ({"$id": ref, "$ref": "#"}, None),  # a $id moves nothing outside
                (deep, "channels[0].schema.items.items")):
            doc = document()
            doc["channels"][0]["schema"] = schema
            path = tmp_path / "integration.json"
            path.write_text(json.dumps(doc))
            done = run("x86_64-unknown-linux-musl", "check", str(path))
            if message is None:
                assert done.returncode == 0, done.stderr
            else:
                assert done.returncode == 1
                assert message in done.stderr.decode(), done.stderr
        assert server.fetched == []


def test_run_of_a_member_owning_nothing_says_so(tmp_path: Path) -> None:
    path = tmp_path / "integration.yaml"
    path.write_text(YAML)
    done = run("x86_64-unknown-linux-musl", "run", "--run", "r", "--attempt", "1", "--member",
               "rank-7", "--integration", str(path), "--token-file", "t", "--spool",
               str(tmp_path / "spool"), "--target", "localhost:1", "--ca-file", "ca.pem")
    assert done.returncode == 2
    assert done.stderr.decode() == (f"tuneplane-collector run: member 'rank-7' owns no source "
                                    f"in {path}\n")
    assert not (tmp_path / "spool").exists()


def test_relative_paths_of_an_artifact_are_read_below_the_working_directory(
        tmp_path: Path, tls_dir: Path) -> None:
    work = tmp_path / "work"
    (work / "out").mkdir(parents=True)
    (work / "out" / "rank0.jsonl").write_text(
        '{"step": 1, "wall_time": 1, "metrics": {"loss": 0.5}}\n')
    (work / "samples.jsonl").write_text('{"step": 1, "wall_time": 1, "record": {"text": "a"}}\n')
    doc = document()
    doc["sources"][0]["path"] = "out/rank0.jsonl"
    doc["channels"][0].update(path="samples.jsonl", owner="rank-0")
    artifact = tmp_path / "integration.json"
    artifact.write_text(json.dumps(doc))
    done = unreachable_run(HOST_TARGET, tmp_path, tls_dir, {}, "--integration", str(artifact),
                           "--workdir", str(work),
                           read=[work / "out" / "rank0.jsonl", work / "samples.jsonl"])
    assert done.returncode == 3, done.stderr
    assert "1 points and 1 rich records read" in done.stderr, done.stderr
    status = json.loads(run(HOST_TARGET, "spool", "status", str(tmp_path / "spool")).stdout)
    read_to = {p["source"]: p["offset"] for p in status["positions"]}
    assert read_to == {"train": (work / "out" / "rank0.jsonl").stat().st_size,
                       "samples": (work / "samples.jsonl").stat().st_size}
