"""TensorBoard's purge on restarts, applied to what the collector sealed, equals what
TensorBoard's own multiplexer serves from the same files (no services needed)."""

from __future__ import annotations

import random
from pathlib import Path

from tests.support.collector_binary import HOST_TARGET, spooled, unreachable_run
from tests.support.tier import examples
from tests.support.truth import (
    Run,
    Written,
    histogram,
    tensorboard_purged,
    write_events,
    write_old_style_logdir,
    write_restart_logdir,
)
from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1.identity import BatchKey
from tuneplane.web.read.purge import Marker, batch_order, cuts, kept, markers_of_series

Points = list[tuple[int, float, float]]


def sealed(logdirs: dict[str, Path], where: Path, tls_dir: Path,
           max_points: int) -> list[pb.Batch]:
    """What the collector binary seals of each TensorBoard log directory (source id → its
    directory), every batch left in its spool (no ingest to send to)."""
    events = [f for logdir in logdirs.values() for f in logdir.rglob("events.out.tfevents.*")]
    done = unreachable_run(HOST_TARGET, where, tls_dir, {}, *(
        a for source, logdir in logdirs.items() for a in ("--tensorboard", f"{source}={logdir}")),
        read=events, max_points=max_points)
    assert done.returncode == 3, done.stderr  # all spooled, none delivered
    return spooled(where / "spool")


def batch_id(batch: pb.Batch) -> str:
    return BatchKey.from_proto(batch.identity).batch_id


def canonical(batches: list[pb.Batch], source: str = "tb") -> dict[Run, Points]:
    """Each series of ``source``: its points in read order after the purge, as the canonical
    view keeps them."""
    markers = [Marker(batch_id(b), m.file, m.step, i, tuple(m.tags))
               for b in batches for i, m in enumerate(b.session_starts) if m.source == source]
    epochs = {b.identity.spool_epoch: 0.0 for b in batches}
    ids = [batch_id(b) for b in sorted(batches, key=lambda b: batch_order(batch_id(b), epochs))]
    runs: dict[Run, Points] = {}
    for batch in batches:
        for chunk in (c for c in batch.chunks if c.source == source):
            series_markers = markers_of_series(markers, chunk.run_path, chunk.tag)
            cut = cuts(ids, series_markers, epochs).get(batch_id(batch))
            arrays = (list(chunk.steps), list(chunk.wall_times), list(chunk.values))
            steps, wall_times, values = arrays if cut is None else kept(arrays, cut)
            runs.setdefault((chunk.run_path, chunk.tag), []).extend(
                zip(steps, wall_times, values, strict=True))
    return runs


def test_restarts_purge_like_tensorboard_and_out_of_order_steps_stay(tmp_path: Path,
                                                                     tls_dir: Path) -> None:
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
        batches = sealed({"tb": logdir}, tmp_path / f"at-{max_points}", tls_dir, max_points)
        assert sum(len(b.session_starts) for b in batches) == 4
        assert canonical(batches) == truth, max_points


def test_a_restart_purges_only_its_own_run_and_the_first_start_nothing(tmp_path: Path) -> None:
    markers = [Marker("e-1", "sub/events.1", 0), Marker("e-3", "sub/events.2", 5)]
    assert markers_of_series(markers, "", "loss") == []
    assert markers_of_series(markers, "sub", "loss") == markers
    epochs = {"e": 1.0, "f": 0.5}  # epoch f was sealed first: its batches come before e's
    assert cuts(["e-1", "e-2", "e-3", "e-4", "f-9"], markers[1:], epochs) == {}
    assert cuts(["e-1", "e-2", "e-3", "e-4", "f-9"], markers, epochs) == {
        "e-1": 5, "e-2": 5, "f-9": 5}
    later = [*markers, Marker("e-5", "sub/events.2", 8), Marker("e-6", "sub/events.2", 2)]
    assert cuts(["e-1", "e-4", "e-5", "e-6"], later, epochs) == {"e-1": 2, "e-4": 2, "e-5": 2}


def test_old_style_files_purge_out_of_order_steps_by_tag_like_tensorboard(
        tmp_path: Path, tls_dir: Path) -> None:
    logdir = tmp_path / "logs"
    write_old_style_logdir(logdir)
    truth = tensorboard_purged(logdir)
    # TensorBoard itself: in the root run loss@30 purged loss 30..59 but no acc, acc@50
    # (below the histogram's 200) acc 50..59, and the next file's step 20 both tags >= 20.
    assert [s for s, _, _ in truth[("", "loss")]] == [*range(20), 20, 21]
    assert [s for s, _, _ in truth[("", "acc")]] == [*range(20), 20]
    assert [s for s, _, _ in truth[("versioned", "loss")]] == [*range(7), 7]
    assert [s for s, _, _ in truth[("upgraded", "loss")]] == [
        *range(20), *range(10, 25), *range(15, 20), 3]
    assert [s for s, _, _ in truth[("kept", "loss")]] == [*range(12), 5, 12, 13, 14]
    for max_points in (1000, 7, 1):
        batches = sealed({"tb": logdir}, tmp_path / f"at-{max_points}", tls_dir, max_points)
        assert canonical(batches) == truth, max_points
        markers = [m for b in batches for m in b.session_starts]
        assert sorted((m.file, m.step, list(m.tags)) for m in markers if m.tags) == [
            ("events.out.tfevents.1.a", 30, ["loss"]), ("events.out.tfevents.1.a", 50, ["acc"]),
            ("events.out.tfevents.2.a", 20, ["loss", "acc"]),
            ("versioned/events.out.tfevents.1.a", 7, ["loss"])]
        # STARTs read under the older rule are none; "upgraded"'s first and "kept"'s are.
        assert sorted((m.file, m.step) for m in markers if not m.tags) == [
            ("kept/events.out.tfevents.1.a", 0), ("kept/events.out.tfevents.2.a", 12),
            ("upgraded/events.out.tfevents.2.a", 15), ("upgraded/events.out.tfevents.2.a", 25)]


def random_file(rng: random.Random) -> list[Written]:
    events: list[Written] = []
    step = rng.randrange(-3, 30)
    for _ in range(rng.randrange(1, 40)):
        step += rng.choice((1, 1, 1, 2, -rng.randrange(1, 25)))
        roll = rng.random()
        if roll < 0.08:
            events.append(step)
        elif roll < 0.14:
            events.append(histogram(step, "w"))
        else:
            tags = rng.sample(["a", "b", "c"], rng.randrange(1, 4))
            events.append((step, {t: rng.randrange(1000) / 8 for t in tags}))
    return events


def test_random_event_sequences_purge_like_tensorboards_accumulator(tmp_path: Path,
                                                                    tls_dir: Path) -> None:
    """Forty log directories (ten in the fast tier), each of runs of one to three files, each
    with or without a file_version, holding scalars of a few tags at wandering steps,
    histograms and STARTs: the canonical view of what the collector sealed of each (one
    collector reading them all as sources) equals TensorBoard's multiplexer on the same
    files."""
    logdirs: dict[str, Path] = {}
    for seed in range(examples(40)):
        rng = random.Random(seed)
        logdir = logdirs[f"tb{seed}"] = tmp_path / f"logs-{seed}"
        for run in ("", "r1", "r2/deep"):
            for n in range(rng.randrange(1, 4)):
                version = rng.choice((None, None, "brain.Event:2", "brain.Event:1"))
                write_events(logdir / run / f"events.out.tfevents.{n}.x", random_file(rng),
                             file_version=version)
    truths = {source: tensorboard_purged(logdir) for source, logdir in logdirs.items()}
    for max_points in (1000, 3):
        batches = sealed(logdirs, tmp_path / f"at-{max_points}", tls_dir, max_points)
        for source, truth in truths.items():
            assert canonical(batches, source) == truth, (source, max_points)
