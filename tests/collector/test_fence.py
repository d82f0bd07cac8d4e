"""Sources are never read from fenced directories, however their paths resolve: a training
command that swaps its output for a link into the agent's state gets nothing read."""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import pytest

from tuneplane.collector.fence import OPEN, Fence, SourceRefused
from tuneplane.collector.reader import SourceKind, SourceReader, SourceSpec
from tuneplane.collector.spool import Spool
from tuneplane.telemetry.v1.identity import MemberKey

LINES = "".join(json.dumps({"step": s, "wall_time": 1.0, "metrics": {"secret": s}}) + "\n"
                for s in range(5))


@pytest.fixture
def state(tmp_path: Path) -> Path:
    """A fenced directory holding a file a source could be linked to."""
    directory = tmp_path / "state"
    directory.mkdir()
    (directory / "secret.jsonl").write_text(LINES)
    return directory


def reader(tmp_path: Path, source: Path, fence: Fence) -> SourceReader:
    return SourceReader(Spool(tmp_path / f"spool-{len(fence.forbidden)}", MemberKey("r", 1, "m")),
                        [SourceSpec("train", source, SourceKind.JSONL)], max_points=100,
                        max_bytes=1 << 20, spool_bytes=1 << 30, clock=time.time, fence=fence)


def test_a_source_linked_into_a_fenced_directory_is_refused_once_and_not_read(
        tmp_path: Path, state: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "metrics.jsonl").symlink_to(state / "secret.jsonl")
    unfenced = reader(tmp_path, work / "metrics.jsonl", OPEN)
    unfenced.run_once()
    assert unfenced.counters.points == 5  # without the fence the link is followed
    fenced = reader(tmp_path, work / "metrics.jsonl", Fence.of([state]))
    fenced.run_once()
    fenced.run_once()
    assert fenced.counters.points == 0
    assert fenced.problems == [f"source train: refused: {work / 'metrics.jsonl'} is "
                               f"{(state / 'secret.jsonl').resolve()}, inside "
                               f"{state.resolve()}, which sources are never read from"]


def test_the_file_opened_is_checked_not_the_path_checked_before(
        tmp_path: Path, state: Path) -> None:
    fence = Fence.of([state])
    link = tmp_path / "metrics.jsonl"
    link.write_text(LINES)
    assert fence.refusal(link) is None  # checked while harmless ...
    link.unlink()
    link.symlink_to(state / "secret.jsonl")  # ... swapped before it is opened
    with pytest.raises(SourceRefused, match="which sources are never read from"):
        fence.open(link)
    assert "inside" in str(fence.refusal(link))
    (state / "dir").mkdir()
    (tmp_path / "up").symlink_to(state / "dir")
    (state / "dir" / "f.jsonl").write_text(LINES)
    with pytest.raises(SourceRefused, match=re.escape(f"is {state.resolve()}/dir/f.jsonl")):
        fence.open(tmp_path / "up" / "f.jsonl")  # a linked directory on the way


def test_only_regular_files_are_read_and_a_fifo_does_not_block(tmp_path: Path) -> None:
    fifo = tmp_path / "metrics.jsonl"
    os.mkfifo(fifo)
    started = time.monotonic()
    with pytest.raises(SourceRefused, match="is not a regular file"):
        OPEN.open(fifo)
    assert time.monotonic() - started < 1
    plain = tmp_path / "plain.jsonl"
    plain.write_text(LINES)
    with OPEN.open(plain) as handle:
        assert handle.read() == LINES.encode()
        assert os.get_blocking(handle.fileno())
