"""A source file rotated, truncated, written anew or deleted under a collector: each is an
event of its own, said once and kept in ``spool status``; a new generation is read from its
start, and a file renamed away or deleted is finished through the descriptor the collector
holds. Every case ends in exact counts: the lines written, the points spooled, no
duplicate."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from tensorboard.compat.proto import event_pb2, summary_pb2

from tests.collector.binary.collected import spooled_points
from tests.support.collector_binary import spool_status, unreachable_args
from tests.support.truth import frame, write_events

Status = dict[str, Any]
Start = Callable[[Path], "Collector"]


@pytest.fixture
def start(tmp_path: Path, tls_dir: Path) -> Iterator[Start]:
    """Starts collectors of a JSONL source; any still running at the end is killed."""
    started: list[Collector] = []

    def started_on(source: Path) -> Collector:
        started.append(Collector(tmp_path, tls_dir, source))
        return started[-1]

    yield started_on
    for collector in started:
        collector.end()


def lines(first: int, count: int, tag: str = "loss") -> bytes:
    """``count`` JSONL lines, steps ``first`` on, one point each."""
    return b"".join(json.dumps({"step": s, "wall_time": 1.0 + s, "metrics": {tag: s / 2}})
                    .encode() + b"\n" for s in range(first, first + count))


class Collector:
    """``run`` of one JSONL source against an unreachable ingest (the batches stay in the
    spool), its log in a file."""

    def __init__(self, tmp_path: Path, tls_dir: Path, source: Path,
                 kind: str = "--source") -> None:
        self.spool = tmp_path / "spool"
        self.log = tempfile.TemporaryFile("w+")  # noqa: SIM115 (closed by stop or end)
        self.process = subprocess.Popen(
            unreachable_args(tmp_path, tls_dir, kind, f"m={source}"), stderr=self.log,
            text=True, env={**os.environ, "TUNEPLANE_TELEMETRY_DRAIN_SECONDS": "1"})

    def wait(self, reached: Callable[[Status], bool], what: str, timeout: float = 60) -> Status:
        """The spool's status once ``reached`` holds of it."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.process.poll() is None, self.said()
            status = spool_status(self.spool)
            if status and reached(status):
                return status
            time.sleep(0.05)
        raise AssertionError(f"{what}: not reached in {timeout} s\n{spool_status(self.spool)}"
                             f"\n{self.said()[-3000:]}")

    def said(self) -> str:
        self.log.seek(0)
        return self.log.read()

    def stop(self) -> str:
        self.process.send_signal(signal.SIGTERM)
        code = self.process.wait(timeout=60)
        said = self.said()
        assert code == 3, said  # ingest unreachable: the batches stay spooled
        return said

    def end(self) -> None:
        """Killed, if a test failed with it running; its log closed."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=60)
        self.log.close()

    @contextmanager
    def paused(self) -> Iterator[None]:
        """The collector stopped (SIGSTOP) meanwhile: what is done to the file happens
        between two of its steps, whatever their timing."""
        self.process.send_signal(signal.SIGSTOP)
        try:
            yield
        finally:
            self.process.send_signal(signal.SIGCONT)


def read_to(size: int, generation: int = 1) -> Callable[[Status], bool]:
    return lambda status: [(p["offset"], p["generation"]) for p in status["positions"]] == [
        (size, generation)]


def events(status: Status) -> list[str]:
    return [e["event"] for e in status["source_events"]]


def exact(spool: Path, steps: list[int]) -> None:
    """The spool holds one point for each of ``steps``, each once."""
    points = spooled_points(spool)
    seen = Counter(step for _, step, _ in points)
    assert [s for s, n in seen.items() if n > 1] == []  # no duplicate
    assert sorted(seen) == sorted(steps)
    assert len(points) == len(steps)


def test_a_copytruncated_file_is_read_again_from_its_start(tmp_path: Path,
                                                           start: Start) -> None:
    """3,000 lines read, then the file truncated and 1,000 new ones written (logrotate's
    copytruncate): all 4,000 spooled, once each; the truncation said once, not in a loop."""
    path = tmp_path / "m.jsonl"
    path.write_bytes(lines(0, 3000))
    collector = start(path)
    collector.wait(read_to(path.stat().st_size), "the first generation read")
    with collector.paused():
        with path.open("r+b") as rotated:
            rotated.truncate(0)
        path.write_bytes(lines(3000, 1000))
    status = collector.wait(read_to(path.stat().st_size, 2), "the second generation read")
    said = collector.stop()
    assert events(status) == ["truncated"]
    assert said.count("truncated below the offset read to") == 1, said
    exact(tmp_path / "spool", list(range(4000)))


def test_a_file_truncated_while_no_collector_ran_is_read_again_by_the_next(
        tmp_path: Path, start: Start) -> None:
    path = tmp_path / "m.jsonl"
    path.write_bytes(lines(0, 3000))
    collector = start(path)
    collector.wait(read_to(path.stat().st_size), "the first generation read")
    collector.stop()
    with path.open("r+b") as rotated:
        rotated.truncate(0)
    path.write_bytes(lines(3000, 1000))
    again = start(path)
    status = again.wait(read_to(path.stat().st_size, 2), "the second generation read")
    again.stop()
    assert events(status) == ["truncated"]
    exact(tmp_path / "spool", list(range(4000)))


def test_a_file_written_anew_in_place_longer_than_before_is_a_new_generation(
        tmp_path: Path, start: Start) -> None:
    """Truncated and written past the old offset before the collector looked: its first
    bytes are other bytes, so it is read from its start, not from the old offset."""
    path = tmp_path / "m.jsonl"
    path.write_bytes(lines(0, 1000))
    collector = start(path)
    collector.wait(read_to(path.stat().st_size), "the first generation read")
    with collector.paused(), path.open("r+b") as rotated:  # in place: the same inode
        rotated.truncate(0)
        rotated.write(lines(5000, 1500))
    status = collector.wait(read_to(path.stat().st_size, 2), "the second generation read")
    collector.stop()
    assert events(status) == ["rewritten"]
    exact(tmp_path / "spool", [*range(1000), *range(5000, 6500)])


def test_a_renamed_file_is_finished_through_its_descriptor_then_the_new_one_read(
        tmp_path: Path, start: Start) -> None:
    """logrotate's create: 500 lines appended, the file renamed away and a new one made with
    700, all between two steps: the 500 are read from the renamed file, then the 700."""
    path = tmp_path / "m.jsonl"
    path.write_bytes(lines(0, 3000))
    collector = start(path)
    collector.wait(read_to(path.stat().st_size), "the first file read")
    with collector.paused():
        with path.open("ab") as out:
            out.write(lines(3000, 500))
        path.rename(tmp_path / "m.jsonl.1")
        path.write_bytes(lines(3500, 700))
    status = collector.wait(read_to(path.stat().st_size, 2), "the new file read")
    said = collector.stop()
    assert events(status) == ["replaced"]
    (event,) = status["source_events"]
    assert "read to its end" in event["detail"], event
    assert said.count("replaced by another file") == 1, said
    exact(tmp_path / "spool", list(range(4200)))


#: What a writer killed mid-line leaves at the end of its file.
UNFINISHED = b'{"step": 150, "wall_time": 151.0, "metr'


def rotated_mid_line(path: Path, collector: Collector) -> None:
    """50 lines and an unfinished one appended, the file renamed away and a new one made
    with 30 lines, all between two steps of ``collector``."""
    with collector.paused():
        with path.open("ab") as out:
            out.write(lines(100, 50) + UNFINISHED)
        path.rename(path.with_suffix(".jsonl.1"))
        path.write_bytes(lines(200, 30))


def test_a_renamed_file_ending_mid_line_is_waited_for_then_the_new_one_read(
        tmp_path: Path, start: Start) -> None:
    """The renamed file's last line is never ended (its writer was killed): it is waited
    for a while, then left unread and said, and the new file is read; the collector neither
    spins on the old file nor leaves the new one unread."""
    path = tmp_path / "m.jsonl"
    path.write_bytes(lines(0, 100))
    collector = start(path)
    collector.wait(read_to(path.stat().st_size), "the first file read")
    rotated_mid_line(path, collector)
    status = collector.wait(read_to(path.stat().st_size, 2), "the new file read")
    said = collector.stop()
    (event,) = status["source_events"]
    assert event["event"] == "replaced"
    assert (f"all but its last {len(UNFINISHED)} bytes, left unread: an unfinished line or "
            "record its writer did not end within 5s") in event["detail"], event
    assert said.count("replaced by another file") == 1, said
    exact(tmp_path / "spool", [*range(150), *range(200, 230)])


def test_a_line_ended_in_the_renamed_file_while_waited_for_is_read(
        tmp_path: Path, start: Start) -> None:
    """logrotate's create: the writer goes on appending to the renamed file until it
    reopens; the line it was writing is ended there a second later (the collector has seen
    it unfinished by then, and waits for it), and read, then the new file."""
    path = tmp_path / "m.jsonl"
    path.write_bytes(lines(0, 100))
    collector = start(path)
    collector.wait(read_to(path.stat().st_size), "the first file read")
    rotated_mid_line(path, collector)
    time.sleep(1)  # (within the 5 s a tail is waited for; a collector giving it up at once
    # would have read the new file and lost the line by then)
    with path.with_suffix(".jsonl.1").open("ab") as out:
        out.write(b'ics": {"loss": 75.0}}\n' + lines(151, 9))
    status = collector.wait(read_to(path.stat().st_size, 2), "the new file read")
    collector.stop()
    (event,) = status["source_events"]
    assert "read to its end" in event["detail"], event
    exact(tmp_path / "spool", [*range(160), *range(200, 230)])


def test_lines_appended_to_the_renamed_file_after_it_was_read_to_its_end_are_read(
        tmp_path: Path, start: Start) -> None:
    """logrotate's create: the writer appends to the renamed file until it opens the path
    again, here after the collector has read the renamed file to its end. A file read to its
    end is waited for all the same (Fluent Bit's Rotate_Wait): the lines are read from it,
    then the new file."""
    path = tmp_path / "m.jsonl"
    path.write_bytes(lines(0, 100))
    collector = start(path)
    collector.wait(read_to(path.stat().st_size), "the first file read")
    renamed = path.with_suffix(".jsonl.1")
    with collector.paused():
        with path.open("ab") as out:
            out.write(lines(100, 50))
        path.rename(renamed)
        path.write_bytes(lines(200, 30))
    collector.wait(read_to(renamed.stat().st_size), "the renamed file read to its end")
    with renamed.open("ab") as out:  # (a collector that turned to the new file at once has
        out.write(lines(150, 10))    # left the renamed one by now, and these lines with it)
    status = collector.wait(read_to(path.stat().st_size, 2), "the new file read")
    collector.stop()
    (event,) = status["source_events"]
    assert f"read to its end ({renamed.stat().st_size} bytes)" in event["detail"], event
    exact(tmp_path / "spool", [*range(160), *range(200, 230)])


def test_the_drain_waits_for_no_unfinished_tail(tmp_path: Path, start: Start) -> None:
    """The attempt ends just after the rotation: the drain gives the unfinished line up at
    once and reads the new file, rather than end with it unread."""
    path = tmp_path / "m.jsonl"
    path.write_bytes(lines(0, 100))
    collector = start(path)
    collector.wait(read_to(path.stat().st_size), "the first file read")
    rotated_mid_line(path, collector)
    said = collector.stop()
    assert "the drain ended before the sources were read to their end" not in said, said
    assert "left unread" in said, said
    exact(tmp_path / "spool", [*range(150), *range(200, 230)])


def test_a_deleted_file_is_finished_and_a_new_one_at_its_path_read(tmp_path: Path,
                                                                  start: Start) -> None:
    path = tmp_path / "m.jsonl"
    path.write_bytes(lines(0, 2000))
    collector = start(path)
    collector.wait(read_to(path.stat().st_size), "the file read")
    with collector.paused():
        with path.open("ab") as out:
            out.write(lines(2000, 200))
        path.unlink()
    status = collector.wait(lambda s: events(s) == ["deleted"], "the deletion seen")
    assert "read to its end" in status["source_events"][0]["detail"]
    exact(tmp_path / "spool", list(range(2200)))  # the 200 read through the descriptor
    path.write_bytes(lines(9000, 50))
    status = collector.wait(read_to(path.stat().st_size, 3), "the new file read")
    said = collector.stop()
    assert events(status) == ["deleted", "created"]
    assert said.count("deleted; it was read to its end") == 1, said
    exact(tmp_path / "spool", [*range(2200), *range(9000, 9050)])


def test_a_file_replaced_while_no_collector_ran_names_what_could_not_be_read(
        tmp_path: Path, start: Start) -> None:
    """Nothing holds the old file open across a restart: the new one is read from its start
    and the event says the old one was read only to its offset."""
    path = tmp_path / "m.jsonl"
    path.write_bytes(lines(0, 100))
    collector = start(path)
    size = path.stat().st_size
    collector.wait(read_to(size), "the first file read")
    collector.stop()
    path.rename(tmp_path / "m.jsonl.1")
    path.write_bytes(lines(100, 30))
    again = start(path)
    status = again.wait(read_to(path.stat().st_size, 2), "the new file read")
    again.stop()
    (event,) = status["source_events"]
    assert event["event"] == "replaced"
    assert f"read to offset {size} and is no longer there to finish" in event["detail"]
    exact(tmp_path / "spool", list(range(130)))


def scalar_record(step: int) -> bytes:
    event = event_pb2.Event(step=step, wall_time=1000.0 + step, summary=summary_pb2.Summary(
        value=[summary_pb2.Summary.Value(tag="loss", simple_value=step / 2)]))
    return frame(event.SerializeToString())


def test_an_event_file_deleted_from_its_log_directory_is_finished(tmp_path: Path,
                                                                  tls_dir: Path) -> None:
    """TensorBoard log directories follow the same rules: an event file deleted with records
    not yet read is read to its end through its descriptor, once it is no longer listed."""
    logdir = tmp_path / "tb"
    events_file = logdir / "events.out.tfevents.1"
    write_events(events_file, [(s, {"loss": s / 2}) for s in range(100)],
                 file_version="brain.Event:2")
    collector = Collector(tmp_path, tls_dir, logdir, kind="--tensorboard")
    try:
        collector.wait(read_to(events_file.stat().st_size), "the event file read")
        with collector.paused():
            with events_file.open("ab") as out:
                out.write(b"".join(scalar_record(s) for s in range(100, 150)))
            events_file.unlink()
        status = collector.wait(lambda s: events(s) == ["deleted"], "the deletion seen")
        collector.stop()
    finally:
        collector.end()
    assert "read to its end" in status["source_events"][0]["detail"]
    exact(tmp_path / "spool", list(range(150)))


def test_a_file_truncated_again_and_again_is_one_event_counted_said_less_and_less(
        tmp_path: Path, start: Start) -> None:
    """A job truncating its file over and over makes one row of ``source_events`` (its
    count), and log lines at the 1st, 2nd and 4th time, not one per truncation."""
    path = tmp_path / "m.jsonl"
    path.write_bytes(lines(0, 50))
    collector = start(path)
    steps = list(range(50))
    for generation in range(2, 7):  # each shorter than the one before: 5, 4, 3, 2, 1 lines
        collector.wait(read_to(path.stat().st_size, generation - 1), f"generation {generation}")
        with collector.paused():
            path.write_bytes(lines(generation * 100, 7 - generation))  # truncated in place
        steps += range(generation * 100, generation * 100 + 7 - generation)
    status = collector.wait(read_to(path.stat().st_size, 6), "generation 6")
    said = collector.stop()
    (event,) = status["source_events"]
    assert (event["event"], event["count"]) == ("truncated", 5)
    assert said.count("truncated below the offset read to") == 3, said  # 1st, 2nd, 4th
    exact(tmp_path / "spool", steps)
