"""TensorBoard's purge on restarts, applied to what the collector sealed, equals what
TensorBoard's own multiplexer serves from the same files (no services needed)."""

from __future__ import annotations

from pathlib import Path

from tests.support.truth import Run, tensorboard_purged, write_restart_logdir
from tuneplane.collector.reader import SourceKind, SourceReader, SourceSpec
from tuneplane.collector.spool import Spool
from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1.identity import BatchKey, MemberKey
from tuneplane.web.purge import Marker, batch_order, cuts, kept, markers_of_run

Points = list[tuple[int, float, float]]


def sealed(logdir: Path, spool_dir: Path, max_points: int) -> list[pb.Batch]:
    spool = Spool(spool_dir, MemberKey("r", 1, "m"))
    reader = SourceReader(spool, [SourceSpec("tb", logdir, SourceKind.TENSORBOARD)],
                          max_points=max_points, max_bytes=1 << 20, spool_bytes=1 << 30,
                          clock=lambda: 5.0)
    while not reader.run_once():
        pass
    return [pb.Batch.FromString(b.payload) for b in spool.pending(limit=10_000)]


def batch_id(batch: pb.Batch) -> str:
    return BatchKey.from_proto(batch.identity).batch_id


def canonical(batches: list[pb.Batch]) -> dict[Run, Points]:
    """Each series' points in read order after the purge, as the canonical view keeps them."""
    markers = [Marker(batch_id(b), m.file, m.step) for b in batches for m in b.session_starts]
    epochs = {b.identity.spool_epoch: 0.0 for b in batches}
    ids = [batch_id(b) for b in sorted(batches, key=lambda b: batch_order(batch_id(b), epochs))]
    runs: dict[Run, Points] = {}
    for batch in batches:
        for chunk in batch.chunks:
            cut = cuts(ids, markers_of_run(markers, chunk.run_path), epochs).get(batch_id(batch))
            arrays = (list(chunk.steps), list(chunk.wall_times), list(chunk.values))
            steps, wall_times, values = arrays if cut is None else kept(arrays, cut)
            runs.setdefault((chunk.run_path, chunk.tag), []).extend(
                zip(steps, wall_times, values, strict=True))
    return runs


def test_restarts_purge_like_tensorboard_and_out_of_order_steps_stay(tmp_path: Path) -> None:
    logdir = tmp_path / "logs"
    write_restart_logdir(logdir)
    truth = tensorboard_purged(logdir)
    assert set(truth) == {("", "loss"), ("", "acc"), ("sub", "loss")}
    # TensorBoard itself: the restart at 100 cut the first file's 100..119, the
    # out-of-order step 40 stayed, and run sub kept 0..9 and 10..20 after its second START
    # (its first one, at 30, started the run).
    assert [s for s, _, _ in truth[("", "loss")]] == [
        *range(81), 40, *range(81, 100), *range(100, 160)]
    assert [s for s, _, _ in truth[("sub", "loss")]] == [*range(10), *range(10, 21)]
    for max_points in (1000, 37, 7):  # one batch per file .. many, cut inside chunks
        batches = sealed(logdir, tmp_path / f"spool-{max_points}", max_points)
        assert sum(len(b.session_starts) for b in batches) == 4
        assert canonical(batches) == truth, max_points


def test_a_restart_purges_only_its_own_run_and_the_first_start_nothing(tmp_path: Path) -> None:
    markers = [Marker("e-1", "sub/events.1", 0), Marker("e-3", "sub/events.2", 5)]
    assert markers_of_run(markers, "") == []
    assert markers_of_run(markers, "sub") == markers
    epochs = {"e": 1.0, "f": 0.5}  # epoch f was sealed first: its batches come before e's
    assert cuts(["e-1", "e-2", "e-3", "e-4", "f-9"], markers[1:], epochs) == {}
    assert cuts(["e-1", "e-2", "e-3", "e-4", "f-9"], markers, epochs) == {
        "e-1": 5, "e-2": 5, "f-9": 5}
    later = [*markers, Marker("e-5", "sub/events.2", 8), Marker("e-6", "sub/events.2", 2)]
    assert cuts(["e-1", "e-4", "e-5", "e-6"], later, epochs) == {"e-1": 2, "e-4": 2, "e-5": 2}
