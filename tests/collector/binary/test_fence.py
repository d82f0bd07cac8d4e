"""``run --never-read DIR``: no source is read from a fenced directory, however its path
resolves. A source that is (or passes through) a link into it is refused, said once, and
not read; a file swapped for such a link after it was read is judged by the file opened;
only regular files are read, and a FIFO blocks nothing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.collector_binary import HOST_TARGET, run, unreachable_args, unreachable_run
from tests.support.truth import write_jsonl


def offsets(spool: Path) -> dict[str, int]:
    """Where each source is read to (none while the spool is being made)."""
    done = run(HOST_TARGET, "spool", "status", str(spool))
    if done.returncode != 0:
        return {}
    return {p["source"]: p["offset"] for p in json.loads(done.stdout)["positions"]}


def until(collector: subprocess.Popen[bytes], log: Path, done: Callable[[], bool]) -> None:
    """Waits (a bounded while) for ``done()``, the collector running meanwhile."""
    deadline = time.monotonic() + 60
    while not done():
        assert collector.poll() is None, log.read_text()
        assert time.monotonic() < deadline, log.read_text()
        time.sleep(0.05)


def refusal(path: Path, resolved: Path, fenced: Path) -> str:
    return f"{path} is {resolved}, inside {fenced}, which sources are never read from"


@pytest.fixture
def state(tmp_path: Path) -> Path:
    """A directory to fence, holding files a source could be linked to."""
    directory = tmp_path / "state"
    (directory / "dir").mkdir(parents=True)
    write_jsonl(directory / "secret.jsonl", range(8), ["secret"])
    write_jsonl(directory / "dir" / "f.jsonl", range(8), ["secret"])
    return directory.resolve()


def test_a_source_linked_into_a_fenced_directory_is_refused_once_and_not_read(
        tmp_path: Path, tls_dir: Path, state: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "metrics.jsonl").symlink_to(state / "secret.jsonl")
    (work / "up").symlink_to(state / "dir")  # a linked directory on the way
    linked = {"linked": work / "metrics.jsonl", "through": work / "up" / "f.jsonl"}
    unfenced = unreachable_run(HOST_TARGET, tmp_path / "open", tls_dir, linked,
                               read=[state / "secret.jsonl", state / "dir" / "f.jsonl"])
    assert unfenced.returncode == 3, unfenced.stderr  # without the fence, links are followed
    assert offsets(tmp_path / "open" / "spool") == {
        "linked": (state / "secret.jsonl").stat().st_size,
        "through": (state / "dir" / "f.jsonl").stat().st_size}
    marker, spool, log = work / "m.jsonl", tmp_path / "spool", tmp_path / "collector.log"
    write_jsonl(marker, range(5), ["loss"])
    sources = [arg for source, path in {**linked, "m": marker}.items()
               for arg in ("--source", f"{source}={path}")]
    with log.open("wb") as out:
        collector = subprocess.Popen(
            unreachable_args(tmp_path, tls_dir, *sources, "--never-read", str(state)),
            stderr=out, env={**os.environ, "TUNEPLANE_TELEMETRY_DRAIN_SECONDS": "1"})
    try:
        until(collector, log, lambda: offsets(spool).get("m") == marker.stat().st_size)
        write_jsonl(marker, range(5, 10), ["loss"], append=True)  # another pass over them all
        until(collector, log, lambda: offsets(spool).get("m") == marker.stat().st_size)
    finally:
        collector.send_signal(signal.SIGTERM)
        collector.wait(timeout=60)
    said = log.read_text()
    assert offsets(spool) == {"m": marker.stat().st_size}
    assert said.count("source linked: refused: " + refusal(
        work / "metrics.jsonl", state / "secret.jsonl", state)) == 1, said
    assert said.count("source through: refused: " + refusal(
        work / "up" / "f.jsonl", state / "dir" / "f.jsonl", state)) == 1, said
    assert "10 points and 0 rich records read" in said


def test_a_file_swapped_for_a_link_after_it_was_read_is_not_read_through_it(
        tmp_path: Path, tls_dir: Path, state: Path) -> None:
    source, spool, log = tmp_path / "m.jsonl", tmp_path / "spool", tmp_path / "collector.log"
    write_jsonl(source, range(5), ["loss"])
    read_to = source.stat().st_size
    with log.open("wb") as out:
        collector = subprocess.Popen(
            unreachable_args(tmp_path, tls_dir, "--source", f"m={source}", "--never-read",
                             str(state)),
            stderr=out, env={**os.environ, "TUNEPLANE_TELEMETRY_DRAIN_SECONDS": "1"})
    try:
        until(collector, log, lambda: offsets(spool).get("m") == read_to)
        swap = tmp_path / "swap"
        swap.symlink_to(state / "secret.jsonl")
        swap.rename(source)  # checked while harmless, swapped before it is opened again
        until(collector, log, lambda: "which sources are never read from" in log.read_text())
    finally:
        collector.send_signal(signal.SIGTERM)
        collector.wait(timeout=60)
    said = log.read_text()
    assert "source m: refused: " + refusal(source, state / "secret.jsonl", state) in said
    assert offsets(spool) == {"m": read_to}
    assert "5 points and 0 rich records read" in said


def test_only_regular_files_are_read_and_a_fifo_blocks_nothing(tmp_path: Path,
                                                              tls_dir: Path) -> None:
    fifo, marker = tmp_path / "fifo.jsonl", tmp_path / "m.jsonl"
    os.mkfifo(fifo)
    write_jsonl(marker, range(5), ["loss"])
    # The FIFO is the first source: were it opened blocking, nothing after it would be read.
    done = unreachable_run(HOST_TARGET, tmp_path, tls_dir, {"fifo": fifo, "m": marker},
                           read=[marker])
    assert done.returncode == 3, done.stderr
    assert f"source fifo: refused: {fifo} is not a regular file" in done.stderr
    assert offsets(tmp_path / "spool") == {"m": marker.stat().st_size}
