"""Sources are opened with the training user's rights: a file only the collector's user may
read is not read, however the artifact or a link names it."""

from __future__ import annotations

import errno
import json
import os
import pwd
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.users import public_place, system_user
from tuneplane.collector.fence import Fence, SourceRefused
from tuneplane.collector.opener import Opener
from tuneplane.collector.reader import SourceKind, SourceReader, SourceSpec
from tuneplane.collector.spool import Spool
from tuneplane.telemetry.v1.identity import MemberKey

LINES = "".join(json.dumps({"step": s, "wall_time": 1.0, "metrics": {"theirs": s}}) + "\n"
                for s in range(5))


@pytest.fixture
def place() -> Iterator[tuple[Path, Opener, int]]:
    """A public place with a file every user may read and one only root may, and an
    opener running as a new user."""
    with system_user() as user, public_place() as where:
        (where / "open.jsonl").write_text(LINES)
        (where / "open.jsonl").chmod(0o644)
        private = where / "private"
        private.mkdir(mode=0o700)
        (private / "theirs.jsonl").write_text(LINES)
        opener = Opener.start(user.pw_name, timeout=1.0)
        try:
            yield where, opener, user.pw_uid
        finally:
            opener.close()


def test_the_reader_runs_as_the_user_and_cannot_be_looked_into(
        place: tuple[Path, Opener, int]) -> None:
    _, opener, uid = place
    status = Path(f"/proc/{opener.pid}/status").read_text()
    assert f"Uid:\t{uid}\t{uid}\t{uid}\t{uid}" in status
    # Not dumpable after changing user: its /proc files stay root's, out of the user's reach.
    assert Path(f"/proc/{opener.pid}/environ").stat().st_uid == 0
    assert Path(f"/proc/{opener.pid}/mem").stat().st_uid == 0


def test_what_the_user_may_read_is_read_and_nothing_else(
        place: tuple[Path, Opener, int]) -> None:
    where, opener, _ = place
    fence = Fence.of([], opener.open)
    with fence.open(where / "open.jsonl") as handle:
        assert handle.read() == LINES.encode()
    with pytest.raises(SourceRefused, match=r"theirs.jsonl cannot be opened as "
                                            r"tuneplane-train-test-\w+: Permission denied") as got:
        fence.open(where / "private" / "theirs.jsonl")
    assert got.value.errno == errno.EACCES
    with pytest.raises(FileNotFoundError):
        fence.open(where / "not-yet.jsonl")
    (where / "link.jsonl").symlink_to(where / "private" / "theirs.jsonl")
    with pytest.raises(SourceRefused, match="Permission denied"):
        fence.open(where / "link.jsonl")


def test_a_source_naming_another_users_file_gets_nothing_read(
        place: tuple[Path, Opener, int], tmp_path: Path) -> None:
    where, opener, _ = place

    def reader(fence: Fence, name: str) -> SourceReader:
        return SourceReader(Spool(tmp_path / name, MemberKey("r", 1, "m")),
                            [SourceSpec("stolen", where / "private" / "theirs.jsonl",
                                        SourceKind.JSONL)],
                            max_points=100, max_bytes=1 << 20, spool_bytes=1 << 30,
                            clock=time.time, fence=fence)

    as_collector = reader(Fence(), "spool-a")
    as_collector.run_once()
    assert as_collector.counters.points == 5  # the collector's own rights would read it
    as_user = reader(Fence.of([], opener.open), "spool-b")
    as_user.run_once()
    as_user.run_once()
    assert as_user.counters.points == 0
    assert len(as_user.problems) == 1
    assert "cannot be opened as tuneplane-train-test-" in as_user.problems[0]


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGSTOP])
def test_a_killed_or_stopped_reader_is_started_again(
        place: tuple[Path, Opener, int], how: signal.Signals) -> None:
    """The training user may signal it (it is theirs); reading goes on regardless."""
    where, opener, uid = place
    first = opener.pid
    gid = pwd.getpwuid(uid).pw_gid
    subprocess.run(["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "kill",
                    f"-{how.name.removeprefix('SIG')}", str(first)], check=True)
    os.close(opener.open(where / "open.jsonl"))
    assert opener.restarts == 1
    assert opener.pid != first
    with pytest.raises(ChildProcessError):
        os.waitpid(first, os.WNOHANG)  # the old one is gone and reaped


def test_an_unknown_user_is_said_so() -> None:
    with pytest.raises(OSError, match="--read-as no-such-user-x: no such user"):
        Opener.start("no-such-user-x")
