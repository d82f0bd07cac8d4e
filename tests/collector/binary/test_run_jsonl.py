"""``run`` reading a JSONL metric file into its spool: complete lines only (a line still
being written waits, and is read once its newline is there, by the collector restarted too);
a bad line is said with its file and line and passed over; a batch ends on a line boundary
at its point bound; a line no batch holds, or longer than a read, is said and skipped, never
looped on."""

from __future__ import annotations

import json
from pathlib import Path

from tests.collector.binary.collected import collect, spooled_points
from tests.support.collector_binary import HOST_TARGET, run, spooled

READ_BYTES = 4 * 1024 * 1024  # a read's worth: a longer line is skipped


def line(step: int, **metrics: float) -> bytes:
    return json.dumps({"step": step, "wall_time": 1.0 + step, "metrics": metrics}).encode() + b"\n"


def test_a_partial_last_line_waits_and_is_read_once_complete_after_a_restart(
        tmp_path: Path, tls_dir: Path) -> None:
    path = tmp_path / "m.jsonl"
    first = line(1, x=1)
    path.write_bytes(first + b'{"step": 2, "wall')
    collect(tmp_path, tls_dir, {("m", ""): len(first)}, "--source", f"m={path}")
    assert spooled_points(tmp_path / "spool") == [("x", 1, 1.0)]
    with path.open("ab") as out:
        out.write(b'_time": 3, "metrics": {"x": 2}}\n')
    collect(tmp_path, tls_dir, {("m", ""): path.stat().st_size}, "--source", f"m={path}")
    assert spooled_points(tmp_path / "spool") == [("x", 1, 1.0), ("x", 2, 2.0)]  # each once


def test_a_bad_line_is_said_with_file_and_line_and_reading_goes_on(
        tmp_path: Path, tls_dir: Path) -> None:
    path = tmp_path / "m.jsonl"
    path.write_bytes(line(1, x=1) + b"\n{broken\n" + line(3, x=3))
    done = collect(tmp_path, tls_dir, {("m", ""): path.stat().st_size}, "--source", f"m={path}")
    assert spooled_points(tmp_path / "spool") == [("x", 1, 1.0), ("x", 3, 3.0)]
    assert f"{path}:3: not JSON" in done.stderr
    assert done.stderr.count(f"{path}:") == 1, done.stderr  # the blank line is no problem
    (position,) = json.loads(run(HOST_TARGET, "spool", "status",
                                 str(tmp_path / "spool")).stdout)["positions"]
    assert (position["offset"], position["line"]) == (path.stat().st_size, 5)


def test_a_batch_ends_on_a_line_boundary_at_the_point_bound(tmp_path: Path,
                                                            tls_dir: Path) -> None:
    path = tmp_path / "m.jsonl"
    path.write_bytes(b"".join(line(s, a=s, b=-s) for s in range(10)))
    collect(tmp_path, tls_dir, {("m", ""): path.stat().st_size}, "--source", f"m={path}",
            "--max-batch-points", "5")
    sealed = spooled(tmp_path / "spool")
    assert [sum(len(c.steps) for c in b.chunks) for b in sealed] == [4] * 5
    for batch in sealed:  # both metrics of a line in the same batch
        assert [list(c.steps) for c in batch.chunks if c.tag == "a"] == \
            [list(c.steps) for c in batch.chunks if c.tag == "b"]
    assert sorted(spooled_points(tmp_path / "spool")) == sorted(
        [("a", s, s) for s in range(10)] + [("b", s, -s) for s in range(10)])


def test_a_line_over_the_bounds_of_one_batch_is_said_and_passed_over(
        tmp_path: Path, tls_dir: Path) -> None:
    path = tmp_path / "m.jsonl"
    path.write_bytes(line(1, a=1, b=2, c=3) + line(2, a=2))
    done = collect(tmp_path, tls_dir, {("m", ""): path.stat().st_size}, "--source", f"m={path}",
                   "--max-batch-points", "2")
    assert f"{path}:1: 3 metrics" in done.stderr
    assert "over the bounds of one batch" in done.stderr
    assert spooled_points(tmp_path / "spool") == [("a", 2, 2.0)]


def test_a_line_longer_than_a_read_is_skipped_once_its_end_is_written(
        tmp_path: Path, tls_dir: Path) -> None:
    path = tmp_path / "m.jsonl"
    first = line(1, a=1)
    path.write_bytes(first + b'{"pad": "' + b"x" * READ_BYTES)
    waiting = collect(tmp_path, tls_dir, {("m", ""): len(first)}, "--source", f"m={path}")
    assert "byte bound" not in waiting.stderr  # its end is not written yet: no problem
    with path.open("ab") as out:
        out.write(b'"}\n' + line(3, a=3))
    done = collect(tmp_path, tls_dir, {("m", ""): path.stat().st_size}, "--source", f"m={path}")
    assert f"{path}:2: line of {READ_BYTES + 11} bytes, over the {READ_BYTES} byte bound; " \
           "skipped" in done.stderr
    assert spooled_points(tmp_path / "spool") == [("a", 1, 1.0), ("a", 3, 3.0)]


def test_long_lines_within_a_read_are_read_whole_with_no_problem(tmp_path: Path,
                                                                 tls_dir: Path) -> None:
    path = tmp_path / "m.jsonl"
    long_line = json.dumps({"step": 0, "wall_time": 1, "note": "x" * 200_000,
                            "metrics": {"a": 0}}).encode() + b"\n"
    path.write_bytes(long_line + b"".join(line(s, a=s) for s in range(1, 4)))
    done = collect(tmp_path, tls_dir, {("m", ""): path.stat().st_size}, "--source", f"m={path}",
                   "--max-batch-points", "10")
    assert [s for _, s, _ in spooled_points(tmp_path / "spool")] == [0, 1, 2, 3]
    assert str(path) + ":" not in done.stderr, done.stderr
