"""The collector seals only batches ingest accepts: names that are not names are reported
and skipped, and a batch is sealed before it would pass a count bound of the contract."""

from __future__ import annotations

import json
from pathlib import Path

from tensorboard.compat.proto import event_pb2, summary_pb2

from tuneplane.collector import jsonl, tensorboard
from tuneplane.collector.draft import BatchDraft, Position
from tuneplane.collector.tbevents import Decoded, PurgeState, decode
from tuneplane.collector.tfrecord import frame
from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1.identity import MemberKey
from tuneplane.telemetry.v1.limits import MAX_BATCH_SERIES
from tuneplane.telemetry.v1.validation import validate


def event(step: int, tags: list[str]) -> bytes:
    values = [summary_pb2.Summary.Value(tag=t, simple_value=float(step)) for t in tags]
    data: bytes = event_pb2.Event(step=step, wall_time=1.0 + step,
                                  summary=summary_pb2.Summary(value=values)).SerializeToString()
    return data


def sealed(draft: BatchDraft, sequence: int) -> pb.Batch:
    member = MemberKey("run", 1, "rank-0")
    return pb.Batch(identity=pb.BatchIdentity(run_id=member.run_id, attempt=member.attempt,
                                              member=member.member, spool_epoch="e",
                                              sequence=sequence),
                    chunks=draft.chunks(), rich=draft.rich,
                    session_starts=draft.session_starts)


def test_a_tag_with_a_control_character_is_reported_and_skipped() -> None:
    out = Decoded()
    decode(event(3, ["loss", "bad\x00tag", "acc\x1b"]), source="tb", file="f", offset=0,
           plugins={}, state=PurgeState(), out=out)
    assert [s[0] for s in out.scalars] == ["loss"]
    assert len(out.problems) == 2
    assert "tag holds the control character '\\x00' at 3: 'bad\\x00tag'; value skipped" \
        in out.problems[0]


def test_a_plugin_name_with_a_control_character_is_reported_and_skipped() -> None:
    value = summary_pb2.Summary.Value(tag="img", simple_value=1.0)
    value.metadata.plugin_data.plugin_name = "images\x00"
    out = Decoded()
    decode(event_pb2.Event(step=1, summary=summary_pb2.Summary(value=[value]))
           .SerializeToString(), source="tb", file="f", offset=0, plugins={}, state=PurgeState(),
           out=out)
    assert not out.scalars
    assert not out.rich
    assert "plugin name holds the control character" in out.problems[0]


def test_a_jsonl_metric_name_with_a_control_character_is_a_line_problem(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    path.write_text(json.dumps({"step": 1, "wall_time": 1.0, "metrics": {"lo\tss": 1.0}}) + "\n" +
                    json.dumps({"step": 2, "wall_time": 2.0, "metrics": {"loss": 2.0}}) + "\n")
    step = jsonl.read(path, "train", Position(), 1000, 1 << 20)
    assert step.draft.points == 1
    assert "metric name holds the control character '\\t'" in step.problems[0]


def test_many_tags_at_one_step_are_sealed_within_the_series_bound(tmp_path: Path) -> None:
    tags = [f"layer{i}/grad_norm" for i in range(MAX_BATCH_SERIES + 700)]
    path = tmp_path / "events.out.tfevents.1"
    path.write_bytes(b"".join(frame(event(step, tags[i::50]))
                              for step in range(3) for i in range(50)))
    position, batches, points = Position(), 0, 0
    while True:
        step = tensorboard.read_file(path, "events.out.tfevents.1", "tb", position,
                                     max_points=50_000, max_bytes=3 << 20)
        if step.draft.empty():
            break
        batch = sealed(step.draft, batches)
        assert len(batch.chunks) <= MAX_BATCH_SERIES
        points += validate(batch, batch.ByteSize())  # what ingest would accept
        batches, position = batches + 1, step.position
    assert points == 3 * len(tags)
    assert batches >= 3  # the bound took effect: 2,700 series do not fit one batch
