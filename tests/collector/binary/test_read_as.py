"""``run --read-as``: sources are opened with the training user's rights, not the
collector's (root, under the node agent). A file only root may read is not read, however a
source or a link names it; the reader cannot be looked into by that user, and one the user
kills is started again."""

from __future__ import annotations

import json
import os
import pwd
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.collector_binary import spool_status, unreachable_args, unreachable_run
from tests.support.users import public_place, system_user

HOST = "x86_64-unknown-linux-musl"
LINES = "".join(json.dumps({"step": s, "wall_time": 1.0, "metrics": {"theirs": s}}) + "\n"
                for s in range(5))


@pytest.fixture
def place() -> Iterator[tuple[Path, pwd.struct_passwd]]:
    """A public place with a file every user may read and one only root may read."""
    with system_user() as user, public_place() as where:
        (where / "open.jsonl").write_text(LINES)
        (where / "open.jsonl").chmod(0o644)
        private = where / "private"
        private.mkdir(mode=0o700)
        (private / "theirs.jsonl").write_text(LINES)
        (where / "link.jsonl").symlink_to(private / "theirs.jsonl")
        yield where, user


def offsets(spool: Path) -> dict[str, int]:
    """Where each source is read to; none while the collector is still creating the spool
    (its directory exists, its tables not yet)."""
    positions = spool_status(spool).get("positions", [])
    assert isinstance(positions, list)
    return {p["source"]: p["offset"] for p in positions}


@pytest.mark.parametrize("how", ["name", "numbers"])
def test_what_the_user_may_read_is_read_and_nothing_else(
        place: tuple[Path, pwd.struct_passwd], tmp_path: Path, tls_dir: Path,
        how: str) -> None:
    where, user = place
    who = user.pw_name if how == "name" else f"{user.pw_uid}:{user.pw_gid}:{user.pw_gid}"
    said = user.pw_name  # by number too: /etc/passwd names it
    # Without --read-as the collector (root) reads the private file: the fault is real.
    as_root = unreachable_run(HOST, tmp_path / "root", tls_dir,
                              {"theirs": where / "private" / "theirs.jsonl"})
    assert as_root.returncode == 3, as_root.stderr
    assert offsets(tmp_path / "root" / "spool")["theirs"] == len(LINES)
    done = unreachable_run(HOST, tmp_path / "user", tls_dir, {
        "open": where / "open.jsonl", "theirs": where / "private" / "theirs.jsonl",
        "link": where / "link.jsonl", "later": where / "not-yet.jsonl"},
        "--read-as", who, read=[where / "open.jsonl"])
    assert done.returncode == 3, done.stderr
    assert offsets(tmp_path / "user" / "spool") == {"open": len(LINES)}
    for name in ("private/theirs.jsonl", "link.jsonl"):
        assert f"{where / name} cannot be opened as {said}: Permission denied" in done.stderr
    assert "not-yet.jsonl" not in done.stderr  # not there yet: waited for, no problem


def test_an_unknown_user_is_said_so(tmp_path: Path, tls_dir: Path) -> None:
    (tmp_path / "m.jsonl").write_text(LINES)
    for who, said in (("no-such-user-x", "no such user in /etc/passwd"),
                      ("12:x", 'gid "x" is not a number')):
        done = unreachable_run(HOST, tmp_path / who, tls_dir, {"m": tmp_path / "m.jsonl"},
                               "--read-as", who, read=[])
        assert done.returncode == 2
        assert said in done.stderr, done.stderr


def children(pid: int) -> list[int]:
    """The children of every thread of ``pid`` (a reader restarted is a reading thread's)."""
    return sorted(int(child) for task in Path(f"/proc/{pid}/task").iterdir()
                  for child in (task / "children").read_text().split())


def test_the_reader_is_the_user_out_of_its_reach_and_comes_back_when_killed(
        place: tuple[Path, pwd.struct_passwd], tmp_path: Path, tls_dir: Path) -> None:
    where, user = place
    spool = tmp_path / "spool"
    later = where / "later.jsonl"
    collector = subprocess.Popen(
        unreachable_args(tmp_path, tls_dir, "--source", f"open={where / 'open.jsonl'}",
                         "--source", f"later={later}", "--read-as", user.pw_name),
        stderr=subprocess.PIPE, text=True,
        env={**os.environ, "TUNEPLANE_TELEMETRY_DRAIN_SECONDS": "1"})
    try:
        deadline = time.monotonic() + 30
        while not spool.exists() or offsets(spool).get("open") != len(LINES):
            assert time.monotonic() < deadline
            assert collector.poll() is None
            time.sleep(0.05)
        [reader] = children(collector.pid)
        status = Path(f"/proc/{reader}/status").read_text()
        assert f"Uid:\t{user.pw_uid}\t{user.pw_uid}\t{user.pw_uid}\t{user.pw_uid}" in status
        # Not dumpable: its /proc files stay root's, out of the user's reach.
        assert Path(f"/proc/{reader}/environ").stat().st_uid == 0
        assert Path(f"/proc/{reader}/mem").stat().st_uid == 0
        # The user may kill it (it is theirs); reading goes on regardless.
        subprocess.run(["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}",
                        "--clear-groups", "kill", "-KILL", str(reader)], check=True)
        later.write_text(LINES)
        later.chmod(0o644)
        while offsets(spool).get("later") != len(LINES):
            assert time.monotonic() < deadline
            assert collector.poll() is None
            time.sleep(0.05)
        [again] = children(collector.pid)
        assert again != reader
        assert not Path(f"/proc/{reader}").exists()  # the old one is gone and reaped
    finally:
        collector.send_signal(signal.SIGTERM)
        _, stderr = collector.communicate(timeout=30)
    assert f"the reader of sources as {user.pw_name} was gone; started it again" in stderr, stderr
