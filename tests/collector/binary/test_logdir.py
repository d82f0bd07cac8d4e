"""A TensorBoard log directory as the binary lists it: every event file below it in path
order and nothing else; a log directory not made yet is waited for, not a problem; a linked
directory below it is not followed; one that resolves into a fenced directory, or that the
training user may not read (``--read-as``), gives nothing, with the reason said."""

from __future__ import annotations

from pathlib import Path

from tensorboard.compat.proto import event_pb2, summary_pb2

from tests.collector.binary.collected import collect, positions, read
from tests.support.truth import frame
from tests.support.users import public_place, system_user


def write_scalar(path: Path, step: int = 1) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(frame(event_pb2.Event(step=step, wall_time=1.0, summary=summary_pb2.Summary(
        value=[summary_pb2.Summary.Value(tag="loss", simple_value=0.5)])).SerializeToString()))


def test_event_files_below_the_root_are_read_in_path_order(tmp_path: Path) -> None:
    for relative in ("b/events.out.tfevents.2", "events.out.tfevents.1", "a/deep/x.tfevents.3"):
        write_scalar(tmp_path / relative)
    (tmp_path / "a" / "notes.txt").write_text("not an event file")
    records, problems = read(tmp_path)
    assert [r["file"] for r in records] == [
        "a/deep/x.tfevents.3", "b/events.out.tfevents.2", "events.out.tfevents.1"]
    assert problems == []


def test_a_linked_directory_below_the_root_is_not_followed(tmp_path: Path) -> None:
    write_scalar(tmp_path / "elsewhere" / "events.out.tfevents.9")
    write_scalar(tmp_path / "logs" / "events.out.tfevents.1")
    (tmp_path / "logs" / "link").symlink_to(tmp_path / "elsewhere")
    records, _ = read(tmp_path / "logs")
    assert [r["file"] for r in records] == ["events.out.tfevents.1"]


def test_a_log_directory_not_made_yet_is_no_problem_and_read_once_made(
        tmp_path: Path, tls_dir: Path) -> None:
    marker = tmp_path / "m.jsonl"
    marker.write_text('{"step": 1, "wall_time": 1, "metrics": {"x": 1}}\n')
    logdir = tmp_path / "later"
    sources = ("--source", f"m={marker}", "--tensorboard", f"tb={logdir}")
    before = collect(tmp_path, tls_dir, {("m", ""): marker.stat().st_size}, *sources)
    assert str(logdir) not in before.stderr, before.stderr
    write_scalar(logdir / "run" / "events.out.tfevents.1")
    size = (logdir / "run" / "events.out.tfevents.1").stat().st_size
    collect(tmp_path, tls_dir, {("tb", "run/events.out.tfevents.1"): size}, *sources)


def test_a_log_directory_resolving_into_a_fenced_directory_gives_nothing(
        tmp_path: Path, tls_dir: Path) -> None:
    state = tmp_path / "state"
    write_scalar(state / "events.out.tfevents.1")
    (tmp_path / "pointing").symlink_to(state)
    marker = tmp_path / "m.jsonl"
    marker.write_text('{"step": 1, "wall_time": 1, "metrics": {"x": 1}}\n')
    done = collect(tmp_path, tls_dir, {("m", ""): marker.stat().st_size},
                   "--source", f"m={marker}", "--tensorboard", f"tb={tmp_path / 'pointing'}",
                   "--never-read", str(state))
    assert "which sources are never read from" in done.stderr, done.stderr
    assert list(positions(tmp_path / "spool")) == [("m", "")]


def test_under_read_as_only_what_the_training_user_may_read_is_read(
        tmp_path: Path, tls_dir: Path) -> None:
    with system_user() as user, public_place() as place:
        logdir = place / "logs"
        write_scalar(logdir / "public" / "events.out.tfevents.1")
        write_scalar(logdir / "private" / "events.out.tfevents.1")
        for directory in (logdir, logdir / "public"):
            directory.chmod(0o755)
        (logdir / "public" / "events.out.tfevents.1").chmod(0o644)
        (logdir / "private").chmod(0o700)
        public = ("tb", "public/events.out.tfevents.1")
        done = collect(tmp_path, tls_dir, {public: (logdir / public[1]).stat().st_size},
                       "--tensorboard", f"tb={logdir}", "--read-as", user.pw_name)
        assert list(positions(tmp_path / "spool")) == [public]
        assert f"cannot be opened as {user.pw_name}: Permission denied" in done.stderr, \
            done.stderr
