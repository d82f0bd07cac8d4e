"""What sources hold and batches carry, to compare what was stored against."""

from __future__ import annotations

import json
from pathlib import Path

from tensorboard.compat.proto import event_pb2, summary_pb2

from tuneplane.collector.tfrecord import frame
from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1.identity import MemberKey


def write_jsonl(path: Path, steps: range, tags: list[str], *, append: bool = False,
                wall0: float = 1.7e9) -> dict[tuple[str, int], float]:
    """Writes one line per step with every tag; returns the truth {(tag, step): value}."""
    truth: dict[tuple[str, int], float] = {}
    with path.open("a" if append else "w") as out:
        for step in steps:
            metrics = {tag: (step * 0.5 + k) / 7.0 for k, tag in enumerate(tags)}
            truth.update({(tag, step): value for tag, value in metrics.items()})
            out.write(json.dumps({"step": step, "wall_time": wall0 + step,
                                  "metrics": metrics}) + "\n")
    return truth


def member_batch(member: MemberKey, sequence: int, points: int, *, tags: int = 2,
                 epoch: str = "e") -> pb.Batch:
    """A batch as a collector seals it: ``points`` spread over ``tags`` columnar chunks."""
    per_tag = points // tags
    first = sequence * per_tag
    return pb.Batch(
        identity=pb.BatchIdentity(run_id=member.run_id, attempt=member.attempt,
                                  member=member.member, spool_epoch=epoch, sequence=sequence),
        sealed_at=1.7e9 + sequence,
        chunks=[pb.SeriesChunk(source="train", tag=f"tag{t}",
                               steps=list(range(first, first + per_tag)),
                               wall_times=[1.7e9 + s for s in range(first, first + per_tag)],
                               values=[s * 0.25 + t for s in range(first, first + per_tag)])
                for t in range(tags)])


def batch(member: MemberKey, sequence: int = 1, points: int = 10,
          tags: int = 1) -> pb.Batch:
    per_tag = points // tags
    return pb.Batch(
        identity=pb.BatchIdentity(run_id=member.run_id, attempt=member.attempt,
                                  member=member.member, spool_epoch="e1", sequence=sequence),
        chunks=[pb.SeriesChunk(source="train", tag=f"t{t}", steps=list(range(per_tag)),
                               wall_times=[1.0] * per_tag, values=[0.5] * per_tag)
                for t in range(tags)])


PIECE = 500


def pieces(step0: int) -> tuple[bytes, bytes]:
    steps = range(step0, step0 + PIECE)
    jsonl = b"".join(json.dumps({"step": s, "wall_time": 1.0 + s, "metrics": {"loss": s / 3}})
                     .encode() + b"\n" for s in steps)
    events = b"".join(frame(event_pb2.Event(step=s, wall_time=1.0 + s, summary=summary_pb2.Summary(
        value=[summary_pb2.Summary.Value(tag="acc", simple_value=s / 7)])).SerializeToString())
        for s in steps)
    return jsonl, events


def assert_exact(points: list[tuple[str, str, str, int, float]],
                 truth: dict[tuple[str, int], float], member: str, source: str) -> None:
    seen = [(tag, step) for m, s, tag, step, _ in points if (m, s) == (member, source)]
    assert len(seen) == len(set(seen)), "a point is stored twice"
    assert {(t, st): v for m, s, t, st, v in points if (m, s) == (member, source)} == truth
