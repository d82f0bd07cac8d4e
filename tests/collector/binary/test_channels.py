"""Rich JSONL channels of an integration artifact, read by the binary: a record over its
byte bound, off its schema or past the channel's budget is refused with its reason and
counted, never truncated; a line longer than a read waits for its end, then is skipped; the
rest are sealed as JSON records, exact."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.collector.binary.collected import collect
from tests.support.collector_binary import TARGETS, spool_status, spooled, unreachable_run
from tuneplane.telemetry.v1 import telemetry_pb2 as pb

READ_BYTES = 4 * 1024 * 1024  # a read's worth: a longer line is skipped


def line(step: int, record: object) -> str:
    return json.dumps({"step": step, "wall_time": 1.5 + step, "record": record}) + "\n"


def artifact_of(tmp_path: Path, channel: Path, per_minute: int, schema: str) -> Path:
    """An integration artifact of one channel `samples` of rank-0 at ``channel`` (records of
    300 bytes at most, ``per_minute`` bytes a minute, ``schema`` in YAML), and no source of
    rank-0's."""
    artifact = tmp_path / "integration.yaml"
    artifact.write_text(f"""
version: 1
sources: [{{id: unused, kind: jsonl, path: {tmp_path}/none.jsonl, owner: rank-9}}]
channels:
  - {{id: samples, path: {channel}, owner: rank-0, max_record_bytes: 300,
     max_bytes_per_minute: {per_minute}, schema: {schema}}}
""")
    return artifact


@pytest.mark.parametrize("target", TARGETS)
def test_channel_records_are_checked_and_refusals_counted(target: str, tmp_path: Path,
                                                          tls_dir: Path) -> None:
    channel = tmp_path / "samples.jsonl"
    big = line(2, {"text": "x" * 500})
    channel.write_text(
        line(0, {"text": "ok 0"}) + line(1, {"text": 7}) + big
        + '{"step": true, "wall_time": 1, "record": {}}\n' + "{oops\n"
        + "".join(line(i, {"text": f"ok {i}", "n": [i, i / 2]}) for i in range(3, 40)))
    artifact = artifact_of(tmp_path, channel, 1500, "{type: object, required: [text], "
                           "properties: {text: {type: string}}}")
    done = unreachable_run(target, tmp_path, tls_dir, {}, "--integration", str(artifact),
                           read=[channel])
    assert done.returncode == 3, done.stderr
    said = done.stderr
    assert f"{channel}:2: rejected: off the channel's schema: record.text" in said
    assert f"{channel}:3: rejected: record of {len(big) - 1} bytes is over the channel's " \
           "max_record_bytes 300" in said
    assert f"{channel}:4: a channel line needs integer 'step', number 'wall_time'" in said
    assert f"{channel}:5: not JSON" in said
    assert "over the channel's budget of 1500 bytes per minute" in said
    shown = spool_status(tmp_path / "spool")["rejected"]
    assert isinstance(shown, list)
    rejected = {r["reason"]: r["count"] for r in shown}
    records = [r for b in spooled(tmp_path / "spool") for r in b.rich]
    assert rejected["off schema"] == 1
    assert rejected["over max_record_bytes"] == 1
    kept = {r.step: json.loads(r.payload) for r in records}
    assert len(kept) + rejected["over max_bytes_per_minute"] == 38  # every good line, once
    assert kept[0] == {"text": "ok 0"}
    assert all(kept[s] == {"text": f"ok {s}", "n": [s, s / 2]} for s in kept if s)
    assert {(r.source, r.tag, r.kind, r.file) for r in records} == {
        ("samples", "samples", pb.RichRecord.KIND_JSON, "samples.jsonl")}
    assert [r.offset for r in records][:1] == [0]


def test_a_line_longer_than_a_read_waits_for_its_end_then_is_skipped_by_line(
        tmp_path: Path, tls_dir: Path) -> None:
    channel = tmp_path / "samples.jsonl"
    first = line(1, {"text": "before"})
    channel.write_text(first + '{"step": 2, "record": "' + "x" * READ_BYTES)
    artifact = artifact_of(tmp_path, channel, 100000, "{type: object, required: [text]}")
    key = ("samples", "")
    waiting = collect(tmp_path, tls_dir, {key: len(first)}, "--integration", str(artifact))
    assert f"{channel}:2" not in waiting.stderr  # its end is not written yet: no problem
    with channel.open("a") as out:
        out.write('"}\n' + line(3, {"text": "after"}))
    done = collect(tmp_path, tls_dir, {key: channel.stat().st_size}, "--integration",
                   str(artifact))
    assert f"{channel}:2: line of {READ_BYTES + 25} bytes, over the {READ_BYTES} byte bound; " \
           "skipped" in done.stderr
    records = [r for b in spooled(tmp_path / "spool") for r in b.rich]
    assert [(r.step, json.loads(r.payload)) for r in records] == [
        (1, {"text": "before"}), (3, {"text": "after"})]
    assert records[1].offset == channel.stat().st_size - len(line(3, {"text": "after"}))
