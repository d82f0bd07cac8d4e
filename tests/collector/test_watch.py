"""Following by inotify: new files and appended records wake the reader, an unchanged log
directory is not walked again, and polling is taken (and said) where inotify is not."""

from __future__ import annotations

import errno
import logging
import time
from collections.abc import Iterable
from pathlib import Path

import pytest
from tensorboard.compat.proto import event_pb2, summary_pb2

from tuneplane.collector import logdir
from tuneplane.collector.fence import Fence
from tuneplane.collector.reader import SourceKind, SourceReader, SourceSpec
from tuneplane.collector.spool import Spool
from tuneplane.collector.tfrecord import frame
from tuneplane.collector.watch import (
    Inotify,
    Kernel,
    Polling,
    filesystem_type,
    open_inotify,
    wakeups,
)
from tuneplane.telemetry.v1.identity import MemberKey

OWNER = MemberKey("run", 1, "rank-0")


def events(first: int, count: int, tag: str = "loss") -> bytes:
    return b"".join(frame(event_pb2.Event(step=s, wall_time=1.0 + s, summary=summary_pb2.Summary(
        value=[summary_pb2.Summary.Value(tag=tag, simple_value=s)])).SerializeToString())
        for s in range(first, first + count))


def reader(tmp_path: Path, source: Path, follow: Inotify | Polling,
           kind: SourceKind = SourceKind.TENSORBOARD) -> SourceReader:
    return SourceReader(Spool(tmp_path / "spool", OWNER), [SourceSpec("s", source, kind)],
                        max_points=10_000, max_bytes=1 << 20, spool_bytes=1 << 30,
                        clock=time.time, wakeups=follow)


@pytest.fixture
def inotify() -> Iterable[Inotify]:
    follow = Inotify(open_inotify())
    yield follow
    follow.close()


def test_new_runs_new_files_and_appended_records_wake_the_reader(
        tmp_path: Path, inotify: Inotify, monkeypatch: pytest.MonkeyPatch) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    walks: list[Path] = []
    walk = logdir.event_files

    def counted(root: Path, fence: Fence) -> logdir.Listing:
        walks.append(root)
        return walk(root, fence)

    monkeypatch.setattr(logdir, "event_files", counted)
    read = reader(tmp_path, logs, inotify)
    assert read.run_once() is True
    assert inotify.wait(0.0) is True  # the new watch: what came before it is listed again
    assert read.run_once() is True
    assert inotify.wait(0.05) is False  # nothing changed
    first = logs / "events.out.tfevents.1.host"
    first.write_bytes(events(0, 10))
    assert inotify.wait(5.0) is True
    read.run_once()
    assert read.points_read == 10
    with first.open("ab") as out:  # appended: read without walking the directory again
        out.write(events(10, 5))
    walked = len(walks)
    assert inotify.wait(5.0) is True
    read.run_once()
    assert (read.points_read, len(walks)) == (15, walked)
    (logs / "eval").mkdir()  # a new run, its file written right after
    (logs / "eval" / "events.out.tfevents.2.host").write_bytes(events(0, 3, "acc"))
    while inotify.wait(0.2):
        read.run_once()
    assert read.points_read == 18
    assert len(walks) > walked


def test_an_appended_jsonl_line_wakes_the_reader(tmp_path: Path, inotify: Inotify) -> None:
    source = tmp_path / "metrics.jsonl"
    source.write_text('{"step": 1, "wall_time": 1.0, "metrics": {"loss": 1.0}}\n')
    read = reader(tmp_path, source, inotify, SourceKind.JSONL)
    read.run_once()
    while inotify.wait(0.05):
        read.run_once()
    with source.open("a") as out:
        out.write('{"step": 2, "wall_time": 2.0, "metrics": {"loss": 0.5}}\n')
    assert inotify.wait(5.0) is True
    read.run_once()
    assert read.points_read == 2


def test_a_log_directory_not_written_yet_is_polled_until_it_is(tmp_path: Path,
                                                                 inotify: Inotify) -> None:
    logs = tmp_path / "later"
    read = reader(tmp_path, logs, inotify)
    read.run_once()
    assert inotify.wait(0.01) is True  # polled: nothing to watch yet
    logs.mkdir()
    (logs / "events.out.tfevents.1.host").write_bytes(events(0, 4))
    read.run_once()
    assert read.points_read == 4
    while inotify.wait(0.05):
        read.run_once()
    with (logs / "events.out.tfevents.1.host").open("ab") as out:
        out.write(events(4, 1))
    assert inotify.wait(5.0) is True


def test_without_inotify_sources_are_polled_and_it_is_said(
        caplog: pytest.LogCaptureFixture) -> None:
    def no_inotify() -> Kernel:
        raise OSError(errno.EMFILE, "Too many open files")

    slept: list[float] = []
    with caplog.at_level(logging.WARNING, "tuneplane.collector"):
        follow = wakeups(open_kernel=no_inotify, sleep=slept.append)
    assert follow.mode == "polling"
    assert "inotify unavailable (Too many open files): sources are polled" in caplog.text
    assert follow.wait(0.5) is True
    assert slept == [0.5]
    assert follow.listing_stale() is True


def test_a_directory_on_nfs_is_polled_and_it_is_said(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    slept: list[float] = []
    follow = Inotify(open_inotify(), filesystem=lambda _: "nfs4", sleep=slept.append)
    try:
        with caplog.at_level(logging.WARNING, "tuneplane.collector"):
            follow.watch([tmp_path])
        assert f"{tmp_path} is on NFS (nfs4), where other hosts' writes raise no inotify " \
            "event; it is polled" in caplog.text
        follow.listing_stale()
        assert follow.wait(0.5) is True
        assert slept == [0.5]
        assert follow.listing_stale() is True  # listed again every pass
    finally:
        follow.close()


def test_the_filesystem_of_a_path_is_its_longest_mount_point() -> None:
    mountinfo = ("22 1 8:1 / / rw - ext4 /dev/sda1 rw\n"
                 "40 22 0:50 / /home rw - nfs4 server:/home rw\n"
                 "41 40 0:51 / /home/x\\040y rw - tmpfs tmpfs rw\n")
    assert filesystem_type(Path("/home/a/b"), mountinfo) == "nfs4"
    assert filesystem_type(Path("/homework"), mountinfo) == "ext4"
    assert filesystem_type(Path("/home/x y/z"), mountinfo) == "tmpfs"
