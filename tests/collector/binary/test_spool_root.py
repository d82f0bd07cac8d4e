"""Where the binary keeps a member's spool: ``<TUNEPLANE_TELEMETRY_SPOOL_ROOT>/<run>/<attempt>/
<member>``, every directory made private whatever the umask; a member whose names would leave
the root, or a link out of it, is refused with nothing made; a spool directory others may
open or another user owns is refused; a relative spool directory is made, and judged, below
the working directory; a damaged spool database is reported and kept as it is (``run`` and
``spool status`` alike), and one still being made is never called damaged."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from tests.collector.binary.scripted_ingest import scripted_ingest
from tests.support.collector_binary import HOST_TARGET, command, run, unreachable_args
from tests.support.truth import write_jsonl


def everything(root: Path) -> set[Path]:
    return {Path(d) / n for d, dirs, files in os.walk(root) for n in [*dirs, *files]}


def run_in_root(tmp_path: Path, root: Path, run_id: str, attempt: str, member: str,
                port: int, tls_dir: Path) -> subprocess.CompletedProcess[str]:
    """``run`` of run_id/attempt/member whose spool goes below ``root`` (the setting), under
    umask 022, until idle."""
    write_jsonl(tmp_path / "m.jsonl", range(10), ["loss"])
    (tmp_path / "token").write_text("t\n")
    return subprocess.run(
        [*command(HOST_TARGET), "run", "--run", run_id, "--attempt", attempt, "--member",
         member, "--source", f"train={tmp_path / 'm.jsonl'}", "--token-file",
         str(tmp_path / "token"), "--target", f"localhost:{port}", "--ca-file",
         str(tls_dir / "ca.pem"), "--exit-when-idle"],
        capture_output=True, text=True, timeout=120, check=False, umask=0o022,
        env={**os.environ, "TUNEPLANE_TELEMETRY_SPOOL_ROOT": str(root)})


def test_a_member_spool_is_made_private_inside_its_root(tmp_path: Path, tls_dir: Path) -> None:
    root = tmp_path / "box" / "spool"
    with scripted_ingest(tls_dir) as ingest:
        done = run_in_root(tmp_path, root, "run", "1", "rank-0", ingest.port, tls_dir)
    assert done.returncode == 0, done.stderr
    member = root / "run" / "1" / "rank-0"
    made = {path for path in everything(tmp_path / "box") if path.is_dir()}
    assert made == {root, root / "run", root / "run" / "1", member}
    for path in (tmp_path / "box", *made):
        assert stat.S_IMODE(path.stat().st_mode) == 0o700, path
    assert stat.S_IMODE((member / "spool.sqlite3").stat().st_mode) == 0o600


@pytest.mark.parametrize(("run_id", "attempt", "member", "words"), [
    ("run", "1", "../../x", "member '../../x' cannot name a spool directory"),
    ("run", "1", "..", "member '..' cannot name a spool directory"),
    ("../../etc", "1", "rank-0", "run '../../etc' cannot name a spool directory"),
    ("/tmp/abs", "1", "rank-0", "run '/tmp/abs' cannot name a spool directory"),
    ("run", "1", "rank-0\n", "member 'rank-0\\n' cannot name a spool directory"),
    ("run", "0", "rank-0", "attempt 0 cannot name a spool directory"),
])
def test_a_member_spool_outside_the_root_is_refused_and_nothing_is_made(
        tmp_path: Path, tls_dir: Path, run_id: str, attempt: str, member: str,
        words: str) -> None:
    root = tmp_path / "box" / "spool"
    root.mkdir(parents=True, mode=0o700)
    done = run_in_root(tmp_path, root, run_id, attempt, member, 1, tls_dir)
    assert done.returncode == 2, done.stderr
    assert words in done.stderr
    assert everything(tmp_path / "box") == {root}


def test_a_symbolic_link_out_of_the_root_is_refused(tmp_path: Path, tls_dir: Path) -> None:
    root, outside = tmp_path / "spool", tmp_path / "elsewhere"
    root.mkdir(mode=0o700)
    outside.mkdir(mode=0o700)
    (root / "run").symlink_to(outside)
    done = run_in_root(tmp_path, root, "run", "1", "rank-0", 1, tls_dir)
    assert done.returncode == 2, done.stderr
    assert f"{root / 'run'} is a symbolic link to {outside}; a spool stays inside {root}" \
        in done.stderr
    assert list(outside.iterdir()) == []


def test_a_spool_directory_others_may_open_or_another_user_owns_is_refused(
        tmp_path: Path, tls_dir: Path) -> None:
    spool = tmp_path / "spool"
    spool.mkdir()
    spool.chmod(0o755)
    args = unreachable_args(tmp_path, tls_dir, "--source", f"m={tmp_path / 'm.jsonl'}")
    opened = subprocess.run(args, capture_output=True, text=True, timeout=60, check=False)
    assert opened.returncode == 2, opened.stderr
    assert f"spool directory {spool} is mode 0755; it must be 0700" in opened.stderr
    spool.chmod(0o700)
    os.chown(spool, 12345, 12345)
    owned = subprocess.run(args, capture_output=True, text=True, timeout=60, check=False)
    assert owned.returncode == 2, owned.stderr
    assert f"spool directory {spool} is owned by uid 12345" in owned.stderr
    assert list(spool.iterdir()) == []


def test_a_damaged_spool_database_is_reported_and_kept(tmp_path: Path, tls_dir: Path) -> None:
    spool = tmp_path / "spool"
    spool.mkdir(mode=0o700)
    garbage = b"this is not an SQLite database" * 100
    (spool / "spool.sqlite3").write_bytes(garbage)
    write_jsonl(tmp_path / "m.jsonl", range(10), ["loss"])
    done = subprocess.run(unreachable_args(tmp_path, tls_dir, "--source",
                                           f"m={tmp_path / 'm.jsonl'}"),
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2, done.stderr
    assert f"spool database {spool / 'spool.sqlite3'} is damaged" in done.stderr
    assert "It is kept as it is" in done.stderr
    assert (spool / "spool.sqlite3").read_bytes() == garbage
    shown = run(HOST_TARGET, "spool", "status", str(spool))
    assert shown.returncode == 1
    assert b"is damaged" in shown.stderr
    assert (spool / "spool.sqlite3").read_bytes() == garbage


def test_a_relative_spool_directory_is_made_and_judged_where_it_is(tmp_path: Path,
                                                                  tls_dir: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    write_jsonl(tmp_path / "m.jsonl", range(10), ["loss"])
    args = [*command(HOST_TARGET), "run", "--run", "r", "--attempt", "1", "--member", "rank-0",
            "--source", f"m={tmp_path / 'm.jsonl'}", "--token-file", str(tmp_path / "token"),
            "--ca-file", str(tls_dir / "ca.pem"), "--exit-when-idle", "--spool", "spool"]
    (tmp_path / "token").write_text("t\n")
    with scripted_ingest(tls_dir) as ingest:
        done = subprocess.run([*args, "--target", f"localhost:{ingest.port}"], cwd=work,
                              capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert stat.S_IMODE((work / "spool").stat().st_mode) == 0o700
    assert (work / "spool" / "spool.sqlite3").is_file()
    # The working directory on NFS: so is the spool below it, and it is refused.
    table = tmp_path / "mountinfo"
    table.write_text(Path("/proc/self/mountinfo").read_text() +
                     f"999 1 0:99 / {work} rw - nfs4 server:/export rw\n")
    refused = subprocess.run([*args, "--target", "localhost:1"], cwd=work, capture_output=True,
                             text=True, timeout=60, check=False,
                             env={**os.environ, "TUNEPLANE_COLLECTOR_MOUNT_TABLE": str(table)})
    assert refused.returncode == 2, refused.stderr
    assert f"is on NFS (nfs4 server:/export at {work})" in refused.stderr


def test_spool_status_beside_a_collector_creating_its_spool_never_calls_it_damaged(
        tmp_path: Path, tls_dir: Path) -> None:
    write_jsonl(tmp_path / "m.jsonl", range(10), ["loss"])
    said: list[str] = []
    for attempt in range(10):  # the spool's first moments, looked at again and again
        spool = tmp_path / f"spool-{attempt}"
        args = unreachable_args(tmp_path, tls_dir, "--source", f"m={tmp_path / 'm.jsonl'}")
        args[args.index("--spool") + 1] = str(spool)
        collector = subprocess.Popen(args, stderr=subprocess.DEVNULL)
        try:
            while (shown := run(HOST_TARGET, "spool", "status", str(spool))).returncode != 0:
                said.append(shown.stderr.decode())
                assert collector.poll() is None
        finally:
            collector.kill()  # how it ends is not what is looked at here
            collector.wait(timeout=60)
    assert said, "the spool was never seen being made"
    assert not [line for line in said if "no spool at" not in line
                and "has no tables yet" not in line], said
