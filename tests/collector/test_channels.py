"""Rich JSONL channels: schema, per-record and per-minute budgets, all counted and visible."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.clock import Clock
from tuneplane.collector.channels import Budget, ChannelReader, ChannelSpec
from tuneplane.collector.draft import Position
from tuneplane.collector.reader import SourceKind, SourceReader, SourceSpec
from tuneplane.collector.spool import Spool, status
from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1.identity import MemberKey

SCHEMA = {"type": "object", "required": ["text"], "properties": {"text": {"type": "string"}}}


def spec(path: Path, per_minute: int = 1_000_000) -> ChannelSpec:
    return ChannelSpec("samples", path, SCHEMA, max_record_bytes=200,
                       max_bytes_per_minute=per_minute)


def line(step: int, record: object) -> str:
    return json.dumps({"step": step, "wall_time": 5.0, "record": record}) + "\n"


def test_records_on_schema_become_json_rich_records(tmp_path: Path) -> None:
    path = tmp_path / "samples.jsonl"
    path.write_text(line(1, {"text": "hello"}) + line(2, {"text": "world"}))
    got = ChannelReader(spec(path), Clock()).read(Position(), max_bytes=1 << 20)
    assert [(r.kind, r.step, json.loads(r.payload)) for r in got.draft.rich] == [
        (pb.RichRecord.KIND_JSON, 1, {"text": "hello"}),
        (pb.RichRecord.KIND_JSON, 2, {"text": "world"})]
    assert got.draft.rich[1].offset == len(line(1, {"text": "hello"}))
    assert got.at_end
    assert not got.rejected


def test_off_schema_oversized_and_malformed_lines_are_rejected_with_reasons(
        tmp_path: Path) -> None:
    path = tmp_path / "samples.jsonl"
    path.write_text(line(1, {"text": 7}) + line(2, {"text": "x" * 300}) + "{oops\n"
                    + line(4, {"text": "ok"}))
    got = ChannelReader(spec(path), Clock()).read(Position(), max_bytes=1 << 20)
    assert [r.step for r in got.draft.rich] == [4]
    assert got.rejected == {"off schema": 1, "over max_record_bytes": 1}
    assert got.problems[0].startswith(f"{path}:1: rejected: off the channel's schema: "
                                      "record.text must be string")
    assert "is over the channel's max_record_bytes 200" in got.problems[1]
    assert got.problems[2].startswith(f"{path}:3: not JSON")


def test_the_per_minute_budget_refills_with_time() -> None:
    budget = Budget(600, now=0.0)
    assert budget.take(600, now=0.0)
    assert not budget.take(10, now=0.5)   # 5 bytes refilled
    assert budget.take(10, now=1.0)       # 10 refilled
    assert budget.take(590, now=120.0)    # full again, never above capacity
    assert not budget.take(20, now=120.0)


def test_rejections_are_counted_in_the_spool_and_shown_by_status(tmp_path: Path) -> None:
    path = tmp_path / "samples.jsonl"
    records = "".join(line(i, {"text": "y" * 50}) for i in range(10))
    path.write_text(records + line(10, {"text": 1}))
    clock = Clock()
    spool = Spool(tmp_path / "spool", MemberKey("r", 1, "m"))
    reader = SourceReader(spool, [SourceSpec("samples", path, SourceKind.CHANNEL,
                                             spec(path, per_minute=400))],
                          max_points=100, max_bytes=1 << 20, spool_bytes=1 << 30, clock=clock)
    reader.run_once()
    shown = status(tmp_path / "spool")
    rejected = {r["reason"]: r["count"] for r in shown["rejected"]}  # type: ignore[attr-defined]
    kept = sum(len(pb.Batch.FromString(b.payload).rich) for b in spool.pending())
    fit = 400 // (len(line(0, {"text": "y" * 50})) - 1)  # the newline is not the record's
    assert 1 < fit < 10
    assert kept == fit
    assert rejected == {"over max_bytes_per_minute": 10 - fit, "off schema": 1}
    assert reader.counters.refused == 11 - fit


def test_a_line_longer_than_a_read_waits_for_its_end_then_is_skipped_by_line(
        tmp_path: Path) -> None:
    from tuneplane.collector.jsonl import READ_BYTES
    path = tmp_path / "samples.jsonl"
    first = line(1, {"text": "before"})
    path.write_text(first + '{"step": 2, "record": "' + "x" * READ_BYTES)
    reader = ChannelReader(spec(path), Clock())
    got = reader.read(Position(), max_bytes=1 << 20)
    assert [r.step for r in got.draft.rich] == [1]
    got = reader.read(got.position, max_bytes=1 << 20)
    assert got.at_end  # its end is not written yet: wait, nothing reported
    assert got.position.offset == len(first)
    assert not got.problems
    with path.open("a") as out:
        out.write('"}\n' + line(3, {"text": "after"}))
    got = reader.read(got.position, max_bytes=1 << 20)
    assert len(got.problems) == 1
    assert f"{path}:2: line of " in got.problems[0]
    assert "skipped" in got.problems[0]
    got = reader.read(got.position, max_bytes=1 << 20)
    assert [r.step for r in got.draft.rich] == [3]
