"""What sources hold and batches carry, to compare what was stored against."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import TypeAlias

import crc32c
from tensorboard.compat.proto import event_pb2, summary_pb2

from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1.identity import MemberKey


def masked_crc(data: bytes) -> int:
    """TFRecord's masked CRC-32C of ``data``."""
    crc = crc32c.crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def frame(data: bytes) -> bytes:
    """One TFRecord of ``data``: its length, the length's masked CRC, the data, the data's
    masked CRC (little-endian), as TensorBoard's writers frame an event."""
    length = struct.pack("<Q", len(data))
    return (length + struct.pack("<I", masked_crc(length)) + data
            + struct.pack("<I", masked_crc(data)))


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


Run = tuple[str, str]  # (run path, tag): a series of one TensorBoard source


def tensorboard_runs(logdir: Path) -> dict[Run, list[tuple[int, float, float]]]:
    """Scalars below ``logdir`` as TensorBoard's own loader reads them, per run (the event
    file's directory relative to ``logdir``, '' for ``logdir`` itself) and tag: (step,
    wall_time, value) in file order."""
    from tensorboard import data_compat
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader
    from tensorboard.util import tensor_util
    runs: dict[Run, list[tuple[int, float, float]]] = {}
    for path in sorted(logdir.rglob("*tfevents*")):
        run = path.parent.relative_to(logdir).as_posix()
        run = "" if run == "." else run
        scalar_tags: set[str] = set()
        for event in EventFileLoader(str(path)).Load():
            for value in event.summary.value if event.HasField("summary") else ():
                migrated = data_compat.migrate_value(value)
                if migrated.metadata.plugin_data.plugin_name == "scalars":
                    scalar_tags.add(migrated.tag)
                if migrated.tag in scalar_tags:
                    number = float(tensor_util.make_ndarray(migrated.tensor).item())
                    runs.setdefault((run, migrated.tag), []).append(
                        (event.step, event.wall_time, number))
    return runs


def write_add_scalars_logdir(logdir: Path, steps: int = 300) -> None:
    """tensorboardX's add_scalars (one tag, a run per key), a root scalar, a nested run."""
    from tensorboardX import SummaryWriter
    root = SummaryWriter(logdir=str(logdir))
    nested = SummaryWriter(logdir=str(logdir / "eval" / "fold_1"))
    for step in range(steps):
        root.add_scalars("lr_group", {"a": 0.1 / (step + 1), "b": 0.2 + step}, step)
        root.add_scalar("lr_group", -step, step)  # the root run's own series of the tag
        nested.add_scalar("lr_group", step * 3.5, step)
    root.close()
    nested.close()


def write_restart_logdir(logdir: Path) -> None:
    """Event files with restarts (TensorBoard's purge applies): the root run starts, then
    restarts in a new file at step 100 after an out-of-order step; run ``sub`` starts at 30
    (its first START: nothing purged) and restarts at 10, both within one file."""
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    def scalars(writer: EventFileWriter, step: int, **values: float) -> None:
        writer.add_event(event_pb2.Event(step=step, wall_time=1000.0 + step, summary=(
            summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=tag, simple_value=v)
                                       for tag, v in values.items()]))))

    def start(writer: EventFileWriter, step: int) -> None:
        writer.add_event(event_pb2.Event(step=step, wall_time=2000.0 + step,
                                         session_log=event_pb2.SessionLog(
                                             status=event_pb2.SessionLog.START)))

    first = EventFileWriter(str(logdir), filename_suffix=".1")
    start(first, 0)  # a run's first START starts it: no purge
    for step in range(120):
        scalars(first, step, loss=1.0 / (step + 1), acc=step / 120)
        if step == 80:
            scalars(first, 40, loss=-1.0)  # out of order: kept (file_version 2)
    first.close()
    second = EventFileWriter(str(logdir), filename_suffix=".2")
    start(second, 100)
    for step in range(100, 160):
        scalars(second, step, loss=0.5 / (step + 1), acc=1.0 - step / 160)
    second.close()
    sub = EventFileWriter(str(logdir / "sub"))
    for step in range(50):
        scalars(sub, step, loss=float(step))
    start(sub, 30)
    for step in range(30, 80):
        scalars(sub, step, loss=100.0 + step)
    start(sub, 10)
    for step in range(10, 21):
        scalars(sub, step, loss=200.0 + step)
    sub.close()


def tensorboard_purged(logdir: Path) -> dict[Run, list[tuple[int, float, float]]]:
    """Scalars as TensorBoard serves them: its plugin event multiplexer with
    ``purge_orphaned_data=True`` and every value kept, per (run, tag), in its order."""
    from tensorboard.backend.event_processing import plugin_event_multiplexer as multiplexer
    from tensorboard.util import tensor_util
    loaded = multiplexer.EventMultiplexer(size_guidance={"tensors": 0},
                                          purge_orphaned_data=True)
    loaded.AddRunsFromDirectory(str(logdir))
    loaded.Reload()
    runs: dict[Run, list[tuple[int, float, float]]] = {}
    for run, content in loaded.Runs().items():
        for tag in content["tensors"]:
            if loaded.SummaryMetadata(run, tag).plugin_data.plugin_name != "scalars":
                continue
            runs[("" if run == "." else run, tag)] = [
                (e.step, e.wall_time, float(tensor_util.make_ndarray(e.tensor_proto).item()))
                for e in loaded.Tensors(run, tag)]
    return runs


Written: TypeAlias = event_pb2.Event | tuple[int, dict[str, float]] | int
"""An event to write: itself, (step, {tag: value}) for scalars, or a step for a START."""


def write_events(path: Path, events: list[Written], *, file_version: str | None = None,
                 ) -> None:
    """An event file written record by record with TensorBoard's record writer, as old
    writers wrote them: a ``file_version`` event first only when one is given."""
    from tensorboard.summary.writer.record_writer import RecordWriter
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as out:
        writer = RecordWriter(out)
        if file_version is not None:
            writer.write(event_pb2.Event(wall_time=1.0, file_version=file_version)
                         .SerializeToString())
        for written in events:
            if isinstance(written, int):
                event = event_pb2.Event(step=written, wall_time=3000.0 + written,
                                        session_log=event_pb2.SessionLog(
                                            status=event_pb2.SessionLog.START))
            elif isinstance(written, tuple):
                step, values = written
                event = event_pb2.Event(step=step, wall_time=1000.0 + step, summary=(
                    summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=t, simple_value=v)
                                               for t, v in values.items()])))
            else:
                event = written
            writer.write(event.SerializeToString())
        writer.flush()


def histogram(step: int, tag: str) -> event_pb2.Event:
    """A Summary event with no scalar in it (TensorBoard still takes its step as the last)."""
    return event_pb2.Event(step=step, wall_time=2000.0 + step, summary=summary_pb2.Summary(
        value=[summary_pb2.Summary.Value(tag=tag, histo=summary_pb2.HistogramProto(
            min=0.0, max=1.0, num=1.0, bucket_limit=[1.0], bucket=[1.0]))]))


def write_old_style_logdir(logdir: Path) -> None:
    """Event files TensorBoard purges by its older rule (no ``file_version`` of 2): an
    out-of-order step purges its own tags only; a START purges nothing."""
    ascending: list[Written] = [(s, {"loss": s / 10, "acc": -s / 10}) for s in range(60)]
    write_events(logdir / "events.out.tfevents.1.a", [
        *ascending,
        (30, {"loss": 30.5}),  # purges loss >= 30, not acc
        *[(s, {"loss": s + 0.5}) for s in range(31, 46)],  # after 30: in order
        10,  # a START: nothing under this rule
        histogram(200, "w"),  # its step is the last Summary step from here
        (50, {"acc": 50.5}),  # out of order against 200: purges acc >= 50
    ])
    write_events(logdir / "events.out.tfevents.2.a", [  # the run's next file goes on from 50
        (20, {"loss": 20.5, "acc": 20.5}), (21, {"loss": 21.5})])
    write_events(logdir / "versioned" / "events.out.tfevents.1.a", [
        *[(s, {"loss": float(s)}) for s in range(20)], 5, (7, {"loss": 7.5})],
        file_version="brain.Event:1")
    # An old file then a version 2 one: the START rule from then on, its first START the
    # run's first; out-of-order steps then stay.
    write_events(logdir / "upgraded" / "events.out.tfevents.1.a",
                 [0, *[(s, {"loss": float(s)}) for s in range(20)]])
    write_events(logdir / "upgraded" / "events.out.tfevents.2.a",
                 [*[(s, {"loss": s + 0.5}) for s in range(10, 30)], 15,
                  *[(s, {"loss": s + 0.25}) for s in range(15, 20)], (3, {"loss": 3.5}), 25],
                 file_version="brain.Event:2")
    # A version 2 file then one without: the version holds for the run, the START rule too.
    write_events(logdir / "kept" / "events.out.tfevents.1.a",
                 [0, *[(s, {"loss": float(s)}) for s in range(20)]],
                 file_version="brain.Event:2")
    write_events(logdir / "kept" / "events.out.tfevents.2.a",
                 [(5, {"loss": 5.5}), 12, *[(s, {"loss": s + 0.5}) for s in range(12, 15)]])
