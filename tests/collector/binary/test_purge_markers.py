"""What TensorBoard purges, as the binary marks it: a restart (START) or, in files before
``file_version`` 2, a step that goes back, becomes a marker before the points it precedes;
the markers applied as TensorBoard applies them give what its own multiplexer serves. In the
spool, a marker opens its batch and a run's files are read in order."""

from __future__ import annotations

from pathlib import Path

from tensorboard.compat.proto import event_pb2, summary_pb2

from tests.collector.binary.collected import collect, purged, read, spooled_series
from tests.support.collector_binary import spooled
from tests.support.truth import (
    frame,
    tensorboard_purged,
    tensorboard_runs,
    write_events,
    write_old_style_logdir,
    write_restart_logdir,
)


def test_markers_applied_as_tensorboard_purges_give_what_its_multiplexer_serves(
        tmp_path: Path) -> None:
    write_restart_logdir(tmp_path / "restarts")
    write_old_style_logdir(tmp_path / "old")
    for logdir in (tmp_path / "restarts", tmp_path / "old"):
        records, problems = read(logdir)
        assert problems == []
        truth = tensorboard_purged(logdir)
        assert purged(records) == {key: points for key, points in truth.items() if points}
        assert purged(records) != tensorboard_runs(logdir)  # the purge took effect


def test_a_step_back_of_an_event_with_no_scalar_to_keep_marks_nothing(tmp_path: Path) -> None:
    """An out-of-order Summary event purges its own tags: one with no values, or none kept,
    purges nothing, and must not become a marker without tags (which reads as a restart)."""
    path = tmp_path / "events.out.tfevents.1.a"
    write_events(path, [
        (50, {"loss": 1.0}),
        event_pb2.Event(step=7, wall_time=2.5, summary=summary_pb2.Summary()),
        (50, {"loss": 1.5}),
        event_pb2.Event(step=7, wall_time=2.5, summary=summary_pb2.Summary(value=[
            summary_pb2.Summary.Value(tag="bad\x00tag", simple_value=1.0)])),
        (50, {"loss": 1.75}),
        (7, {"loss": 2.0}),
    ])
    records, problems = read(path)
    assert [(r["kind"], r.get("tags"), r["step"]) for r in records if r["kind"] != "scalar"] \
        == [("out_of_order_step", ["loss"], 7)]
    (problem,) = problems
    assert "tag holds the control character" in problem
    served = tensorboard_purged(tmp_path)[("", "loss")]  # its bad tag is the binary's to refuse
    assert purged(records) == {("", "loss"): served} == {("", "loss"): [(7, 1007.0, 2.0)]}


def test_a_start_opens_its_batch_and_a_runs_files_are_read_in_order(
        tmp_path: Path, tls_dir: Path) -> None:
    logdir = tmp_path / "logs"
    write_restart_logdir(logdir)
    collect(tmp_path, tls_dir, {
        ("tb", p.relative_to(logdir).as_posix()): p.stat().st_size
        for p in logdir.rglob("*tfevents*")}, "--tensorboard", f"tb={logdir}",
        "--max-batch-points", "37")
    sealed = spooled(tmp_path / "spool")
    assert all(len(b.session_starts) <= 1 for b in sealed)
    assert spooled_series(tmp_path / "spool") == tensorboard_runs(logdir)  # in file order
    opened = [b for b in sealed if b.session_starts]
    assert [m.step for b in opened for m in b.session_starts if "/" not in m.file] == [0, 100]
    assert [m.step for b in opened for m in b.session_starts if "/" in m.file] == [30, 10]
    for batch in opened:  # its points follow its marker
        assert all(min(c.steps) >= batch.session_starts[0].step for c in batch.chunks)


def test_a_step_back_in_an_old_style_file_opens_a_batch_with_its_tags_marker(
        tmp_path: Path, tls_dir: Path) -> None:
    def simple(step: int) -> bytes:
        value = summary_pb2.Summary.Value(tag="loss", simple_value=step)
        return frame(event_pb2.Event(step=step, wall_time=100.0 + step, summary=(
            summary_pb2.Summary(value=[value]))).SerializeToString())

    logdir = tmp_path / "logs"
    logdir.mkdir()
    steps = [*range(10), 4, 5, 6]
    path = logdir / "events.out.tfevents.1.host"
    path.write_bytes(frame(event_pb2.Event(file_version="brain.Event:1").SerializeToString())
                     + b"".join(simple(s) for s in steps))
    collect(tmp_path, tls_dir, {("tb", path.name): path.stat().st_size},
            "--tensorboard", f"tb={logdir}")
    sealed = spooled(tmp_path / "spool")
    assert [[(m.step, list(m.tags)) for m in b.session_starts] for b in sealed] == \
        [[], [(4, ["loss"])]]
    assert [list(c.steps) for b in sealed for c in b.chunks] == [list(range(10)), [4, 5, 6]]
