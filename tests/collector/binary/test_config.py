"""Config entries (hyperparameters) the binary reads from real writers: TensorBoard's own
``hparams_pb`` and tensorboardX's ``add_hparams`` in event files (their truth read back with
TensorBoard's loader and plugin data), JSONL config records (their truth the contract's
reference rules, ``tuneplane.telemetry.v1.config``), as ``read`` prints them; and as ``run``
seals them with an integration artifact's static config, each batch one ingest takes."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import struct_pb2
from tensorboard.backend.event_processing.event_file_loader import EventFileLoader
from tensorboard.compat.proto import event_pb2, summary_pb2
from tensorboard.plugins.hparams import plugin_data_pb2
from tensorboard.plugins.hparams.summary_v2 import hparams_pb
from tensorboard.summary.writer.event_file_writer import EventFileWriter

from tests.collector.binary.collected import collect, read
from tests.support.collector_binary import TARGETS, spooled
from tests.support.tensorboardx import summary_writer
from tests.support.truth import frame
from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1.config import ConfigValue, compact, declare
from tuneplane.telemetry.v1.limits import MAX_BATCH_CONFIG, MAX_CONFIG_KEYS
from tuneplane.telemetry.v1.validation import validate

SESSION_START = "_hparams_/session_start_info"


def typed(value: Any) -> tuple[str, Any]:
    """A value with its type: JSON's true is not 1.0, nor "1.0" 1.0."""
    return type(value).__name__, value


def shown(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``read``'s config records of event files, values typed, offsets left out
    (TensorBoard's loader says none), in key order (a map's order is its writer's)."""
    return sorted(({**{k: v for k, v in r.items() if k != "offset"}, "value": typed(r["value"])}
                   for r in records if r["kind"] == "config"),
                  key=lambda r: (r["file"], r["key"]))


def python_value(value: struct_pb2.Value) -> Any:
    """A ``google.protobuf.Value`` as Python holds the JSON it stands for (objects' keys in
    order)."""
    kind = value.WhichOneof("kind")
    if kind == "list_value":
        return [python_value(v) for v in value.list_value.values]
    if kind == "struct_value":
        fields = value.struct_value.fields
        return {k: python_value(fields[k]) for k in sorted(fields)}
    return None if kind in (None, "null_value") else getattr(value, kind)


def hparams_truth(logdir: Path) -> list[dict[str, Any]]:
    """Each session start's hyperparameters, as TensorBoard's loader and plugin data read
    them, as ``read`` prints config (lists and objects as their compact JSON)."""
    found = []
    for path in sorted(logdir.rglob("*tfevents*")):
        relative = path.relative_to(logdir).as_posix()
        for event in EventFileLoader(str(path)).Load():
            for value in event.summary.value if event.HasField("summary") else ():
                if value.tag != SESSION_START:
                    continue
                data = plugin_data_pb2.HParamsPluginData.FromString(
                    value.metadata.plugin_data.content)
                hparams = data.session_start_info.hparams
                for key in sorted(hparams):
                    held = python_value(hparams[key])
                    if held is None:
                        continue
                    held = compact(held) if isinstance(held, list | dict) else held
                    found.append({"kind": "config", "file": relative,
                                  "run_path": relative.rpartition("/")[0], "key": key,
                                  "value": typed(held), "wall_time": event.wall_time,
                                  "origin": "hparams"})
    return found


@pytest.mark.parametrize("target", TARGETS)
def test_tensorboards_hparams_pb_is_read_as_config(target: str, tmp_path: Path) -> None:
    writer = EventFileWriter(str(tmp_path / "trial-1"))
    summary = hparams_pb({"lr": 0.001, "batch_size": 32, "optimizer": "adam", "amp": True},
                         trial_id="t1", start_time_secs=1.7e9)
    writer.add_event(event_pb2.Event(step=0, wall_time=1.7e9 + 5, summary=summary))
    writer.add_event(event_pb2.Event(step=1, wall_time=1.7e9 + 6, summary=summary_pb2.Summary(
        value=[summary_pb2.Summary.Value(tag="loss", simple_value=0.5)])))
    writer.close()
    records, problems = read(tmp_path, target)
    (file,) = {r["file"] for r in records}
    common = {"kind": "config", "file": file, "run_path": "trial-1", "wall_time": 1.7e9 + 5,
              "origin": "hparams"}
    assert shown(records) == hparams_truth(tmp_path) == [
        {**common, "key": "amp", "value": ("bool", True)},
        {**common, "key": "batch_size", "value": ("float", 32.0)},
        {**common, "key": "lr", "value": ("float", 0.001)},
        {**common, "key": "optimizer", "value": ("str", "adam")}]
    # The session start is still the rich record it was (its empty tensor), the loss a scalar.
    assert [(r["kind"], r.get("plugin")) for r in records if r["kind"] != "config"] == [
        ("tensor", "hparams"), ("scalar", None)]
    assert problems == []


def test_tensorboardx_add_hparams_is_read_as_config_of_its_run(tmp_path: Path) -> None:
    writer = summary_writer(str(tmp_path))
    writer.add_scalar("loss", 0.5, 0)
    writer.add_hparams({"lr": 0.1, "bsize": 16, "optimizer": "sgd", "nesterov": True,
                        "unset": None}, {"hparam/accuracy": 0.9})
    writer.close()
    (run_dir,) = (p for p in tmp_path.iterdir() if p.is_dir())  # <logdir>/<time.time()>
    records, problems = read(tmp_path)
    truth = hparams_truth(tmp_path)
    assert [(r["run_path"], r["key"], r["value"]) for r in truth] == [
        (run_dir.name, "bsize", ("float", 16.0)), (run_dir.name, "lr", ("float", 0.1)),
        (run_dir.name, "nesterov", ("bool", True)), (run_dir.name, "optimizer", ("str", "sgd"))]
    assert shown(records) == truth
    # The experiment and the session's end hold no value, said as before; the start is read.
    assert len(problems) == 2, problems
    assert all("has no readable value" in p and SESSION_START not in p for p in problems)


def test_lists_objects_and_settings_that_cannot_be_sent(tmp_path: Path) -> None:
    value = struct_pb2.Value
    start = plugin_data_pb2.SessionStartInfo()
    start.hparams["layers"].list_value.values.extend(
        [value(number_value=64), value(string_value="a"),
         value(null_value=struct_pb2.NULL_VALUE), value(bool_value=False)])
    start.hparams["nested"].struct_value.update({"b": 1.5, "a": [True]})
    start.hparams["none"].null_value = struct_pb2.NULL_VALUE
    start.hparams["diverged"].number_value = math.nan
    start.hparams["long"].string_value = "x" * 4097
    start.hparams["tab\tkey"].number_value = 1
    start.hparams["ok"].string_value = "é"
    content = plugin_data_pb2.HParamsPluginData(session_start_info=start).SerializeToString()
    session = summary_pb2.Summary.Value(tag=SESSION_START, metadata=summary_pb2.SummaryMetadata(
        plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="hparams",
                                                           content=content)))
    version = frame(event_pb2.Event(wall_time=1.0, file_version="brain.Event:2")
                    .SerializeToString())
    path = tmp_path / "events.out.tfevents.1.h"
    path.write_bytes(version + frame(event_pb2.Event(
        wall_time=9.5, summary=summary_pb2.Summary(value=[session])).SerializeToString()))
    records, problems = read(tmp_path)
    got = {r["key"]: r["value"] for r in shown(records)}
    assert got.pop("nested")[0] == "str"  # its members in the order written
    assert got == {"layers": ("str", '[64.0,"a",null,false]'), "ok": ("str", "é")}
    nested = next(r["value"] for r in records if r.get("key") == "nested")
    assert nested in ('{"a":[true],"b":1.5}', '{"b":1.5,"a":[true]}')
    where = f"{path.name}@{len(version)}"
    assert sorted(problems) == [
        f"{where}: config 'diverged' is nan, not a finite number; skipped",
        f"{where}: config 'long' is a text of 4097 bytes, over the 4096 byte bound; skipped",
        f"{where}: config key holds the control character '\\t' at 3: 'tab\\tkey'; skipped"]


#: JSONL lines with config records (and the line's metrics, which are read as before).
LINES = [
    b'{"config": {"optimizer": {"lr": 0.001, "betas": [0.9, 0.999]}, "seed": 7, '
    b'"name": "exp-1", "amp": false, "note": null, "empty": {}}}',
    b'{"step": 1, "wall_time": 1700000000.5, "metrics": {"loss": 0.5}, '
    b'"config": {"epochs": 10}}',
    b'{"wall_time": 1700000001, "config": {"a": NaN, "b": [Infinity, "x", 1e-05], '
    b'"c\\u0001": 1, "d": "' + b"y" * 5000 + b'", "e": "\\u00e9\\n", "f": "a\\u0000b", '
    b'"x": {"y": {"z": 1e300}}}}',
    b'{"config": {"optimizer": {"lr": 0.002}}}',
    b'{"config": [1]}',
    b'{"step": 2, "wall_time": 2, "metrics": {"loss": 0.25}, "config": "lr=1"}',
]


def jsonl_truth(name: str, path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """What ``read`` prints of LINES by the contract's reference rules: each config record's
    settings after the line's scalars, and each setting skipped or line refused said."""
    records: list[dict[str, Any]] = []
    problems: list[str] = []
    offset = 0
    for number, raw in enumerate(LINES, start=1):
        line = json.loads(raw)  # NaN and Infinity as Python's json reads them
        config = line.get("config")
        for tag, value in line.get("metrics", {}).items():
            records.append({"kind": "scalar", "file": name, "offset": offset, "line": number,
                            "tag": tag, "step": line["step"],
                            "wall_time": line["wall_time"], "value": value})
        if not isinstance(config, dict):
            said = "'config' must be an object of name: value"
            problems.append(f"{path}:{number}: {said}" + ("; skipped" if "metrics" in line
                                                          else ""))
        else:
            settings, skipped = declare(config)
            problems += [f"{path}:{number}: {why}; skipped" for why in skipped]
            records += [{"kind": "config", "file": name, "offset": offset, "line": number,
                         "run_path": "", "key": key, "value": value,
                         "wall_time": line.get("wall_time"), "origin": "jsonl"}
                        for key, value in settings.items()]
        offset += len(raw) + 1
    return records, problems


def exact(record: dict[str, Any]) -> dict[str, Any]:
    return {k: typed(v) if k == "value" else v for k, v in record.items()}


@pytest.mark.parametrize("target", TARGETS)
def test_jsonl_config_records_are_read_by_the_contracts_rules(target: str,
                                                              tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    path.write_bytes(b"\n".join(LINES) + b"\n")
    records, problems = read(path, target)
    truth, said = jsonl_truth(path.name, path)
    assert [exact(r) for r in records] == [exact(r) for r in truth]
    assert len([r for r in records if r["kind"] == "config"]) == 10  # the truth is not empty
    assert problems == said
    assert any("is a text of 5000 bytes" in p for p in problems)


def test_a_sources_keys_past_the_bound_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    many = {f"k{n}": n for n in range(MAX_CONFIG_KEYS + 1)}
    path.write_text(json.dumps({"config": many}) + "\n"
                    + json.dumps({"config": {"k0": -1, "new": 1}}) + "\n")
    records, problems = read(path)
    assert [(r["line"], r["key"]) for r in records][-2:] == [(1, f"k{MAX_CONFIG_KEYS - 1}"),
                                                            (2, "k0")]
    assert problems == [
        f"{path}:1: config 'k{MAX_CONFIG_KEYS}': source '{path}' declares more than "
        f"{MAX_CONFIG_KEYS} keys; skipped",
        f"{path}:2: config 'new': source '{path}' declares more than {MAX_CONFIG_KEYS} keys; "
        "skipped"]


def entries(batches: list[pb.Batch]) -> list[tuple[str, int, str, str, ConfigValue]]:
    """Every config entry sealed: (source, origin, run path, key, value)."""
    return [(e.source, e.origin, e.run_path, e.key, getattr(e, e.WhichOneof("value") or ""))
            for b in batches for e in b.config]


def test_run_seals_config_entries_in_batches_ingest_takes(tmp_path: Path,
                                                          tls_dir: Path) -> None:
    jsonl = tmp_path / "train.jsonl"
    keys = [f"layer{n}.width" for n in range(600)]  # three lines: more than one batch holds
    jsonl.write_text("".join(json.dumps({"config": {k: n for k in keys}}) + "\n"
                             for n in range(3))
                     + '{"step": 1, "wall_time": 1700000000, "metrics": {"loss": 1},'
                       ' "config": {"amp": true}}\n')
    writer = EventFileWriter(str(tmp_path / "tb" / "trial-1"))
    writer.add_event(event_pb2.Event(step=0, wall_time=1.7e9 + 5,
                                     summary=hparams_pb({"lr": 0.1}, start_time_secs=1.7e9)))
    writer.close()
    (events,) = (tmp_path / "tb").rglob("*tfevents*")
    artifact = tmp_path / "integration.json"
    artifact.write_text(json.dumps({
        "version": 1,
        "sources": [{"id": "train", "kind": "jsonl", "path": str(jsonl), "owner": "rank-0"},
                    {"id": "tb", "kind": "tensorboard", "path": str(tmp_path / "tb"),
                     "owner": "rank-0"}],
        "config": {"model": {"name": "resnet", "depth": 50}, "tags": ["a", "b"]}}))
    started = time.time()
    until = {("train", ""): jsonl.stat().st_size,
             ("tb", events.relative_to(tmp_path / "tb").as_posix()): events.stat().st_size}
    collect(tmp_path, tls_dir, until, "--integration", str(artifact))
    batches = spooled(tmp_path / "spool")
    for batch in batches:
        validate(batch, batch.ByteSize())  # what ingest checks, or InvalidBatch
        assert len(batch.config) <= MAX_BATCH_CONFIG
    artifact_batch = batches[0]  # sealed as the collector starts, advancing no file
    assert not artifact_batch.HasField("position")
    assert not artifact_batch.chunks
    assert all(started <= e.wall_time <= time.time() for e in artifact_batch.config)
    sealed = entries(batches)
    assert sealed[:3] == [
        ("", pb.ConfigEntry.ORIGIN_ARTIFACT, "", "model.name", "resnet"),
        ("", pb.ConfigEntry.ORIGIN_ARTIFACT, "", "model.depth", 50.0),
        ("", pb.ConfigEntry.ORIGIN_ARTIFACT, "", "tags", '["a","b"]')]
    jsonl_entries = [e for e in sealed if e[0] == "train"]
    assert jsonl_entries == [("train", pb.ConfigEntry.ORIGIN_JSONL, "", k, float(n))
                             for n in range(3) for k in keys] + [
        ("train", pb.ConfigEntry.ORIGIN_JSONL, "", "amp", True)]
    assert [e for e in sealed if e[0] == "tb"] == [
        ("tb", pb.ConfigEntry.ORIGIN_HPARAMS, "trial-1", "lr", 0.1)]
    stamped = [e.wall_time for b in batches for e in b.config if e.source == "train"]
    assert all(started <= w <= time.time() for w in stamped[:-1])  # lines without a time
    assert stamped[-1] == 1.7e9
    hparams = next(e for b in batches for e in b.config if e.source == "tb")
    assert hparams.wall_time == 1.7e9 + 5
