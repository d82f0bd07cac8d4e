"""The collector's static binaries (collector/binary), built by scripts/collector-binary
before pytest (``TUNEPLANE_COLLECTOR_BINARY_DIR``, cargo's target directory): one per
target, the aarch64 one run here under Debian's qemu-user-static."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tuneplane.telemetry.v1 import telemetry_pb2 as pb

#: Each target and what runs its binary on this (x86_64) host.
TARGETS = {"x86_64-unknown-linux-musl": (), "aarch64-unknown-linux-musl": ("qemu-aarch64-static",)}
#: This host's own target.
HOST_TARGET = "x86_64-unknown-linux-musl"


def built() -> Path:
    """Where scripts/collector-binary builds: ``TUNEPLANE_COLLECTOR_BINARY_DIR`` (scripts/test
    sets it), by default cargo's target directory in ~/.cache/tuneplane."""
    return Path(os.environ.get("TUNEPLANE_COLLECTOR_BINARY_DIR") or
                Path.home() / ".cache" / "tuneplane" / "cargo-target")


def binary(target: str) -> Path:
    path = built() / target / "release" / "tuneplane-collector"
    if not path.is_file():
        pytest.fail(f"{path} is missing: run scripts/collector-binary", pytrace=False)
    return path


def artifact(target: str, out: Path) -> Path:
    """The artifact of ``target``'s binary, built in ``out`` by the host's binary."""
    done = run(HOST_TARGET, "artifact", "build", "--target", target, "--out", str(out),
               "--binary", str(binary(target)))
    assert done.returncode == 0, done.stderr.decode()
    return Path(done.stdout.decode().strip())


def failpoints_binary() -> Path:
    """The host build with the ``failpoints`` feature: crash points for fault tests."""
    path = built() / "failpoints" / "tuneplane-collector"
    if not path.is_file():
        pytest.fail(f"{path} is missing: scripts/collector-binary builds it", pytrace=False)
    return path


def command(target: str) -> list[str]:
    """How to run ``target``'s binary here."""
    runner = TARGETS[target]
    if runner and shutil.which(runner[0]) is None:
        pytest.fail(f"{runner[0]} is missing: scripts/collector-binary installs it",
                    pytrace=False)
    return [*runner, str(binary(target))]


def run(target: str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*command(target), *args], capture_output=True, timeout=timeout,
                          check=False)


def unreachable_args(tmp_path: Path, tls_dir: Path, *extra: str) -> list[str]:
    """``run`` of member r/1/rank-0 on this host, spooling in ``tmp_path/spool`` for an
    ingest that is not there (its token ``tmp_path/token``); ``extra`` names the sources."""
    (tmp_path / "token").write_text("t\n")
    return [*command(HOST_TARGET), "run", "--run", "r", "--attempt", "1", "--member",
            "rank-0", "--spool", str(tmp_path / "spool"), "--target", "localhost:1",
            "--ca-file", str(tls_dir / "ca.pem"), "--token-file", str(tmp_path / "token"),
            *extra]


def unreachable_run(target: str, tmp_path: Path, tls_dir: Path, sources: dict[str, Path],
                    *extra: str, read: list[Path] | None = None, max_points: int = 250,
                    ) -> subprocess.CompletedProcess[str]:
    """``run`` of member run-1/2/rank-0 against an ingest that is not there, spooled in
    ``tmp_path/spool``, until it has read each file of ``read`` (default: the JSONL
    ``sources``) to its end (its spool says so), then stopped with SIGTERM; the drain gives
    up after a second."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "token").write_text("not-a-token\n")
    spool = tmp_path / "spool"
    args = [*command(target), "run", "--run", "run-1", "--attempt", "2", "--member", "rank-0",
            "--spool", str(spool), "--target", "localhost:1", "--ca-file",
            str(tls_dir / "ca.pem"), "--token-file", str(tmp_path / "token"),
            "--max-batch-points", str(max_points), *extra]
    for source_id, path in sources.items():
        args += ["--source", f"{source_id}={path}"]
    ends = sorted(path.stat().st_size for path in (read or list(sources.values())))
    done, _ = run_until(args, spool, lambda positions: read_to(positions, ends))
    return done


Positions = list[dict[str, Any]]


def run_until(args: list[str], spool: Path, reached: Callable[[Positions], bool], *,
              poll: float = 0.1) -> tuple[subprocess.CompletedProcess[str], bool]:
    """``args`` (a collector's ``run``, ingest unreachable) started, and stopped with SIGTERM
    once ``reached`` holds of its spool's positions (or it ended, or a minute passed); the
    drain gives up after a second. What it said, and whether ``reached`` held. Its log goes
    to a file, not a pipe: a pipe no one reads while waiting would fill and stop it."""
    with tempfile.TemporaryFile("w+") as said:
        collector = subprocess.Popen(args, stderr=said, text=True, env={
            **os.environ, "TUNEPLANE_TELEMETRY_DRAIN_SECONDS": "1"})
        try:
            held = wait_until(collector, spool, reached, poll=poll, timeout=60)
        finally:
            collector.send_signal(signal.SIGTERM)
            collector.wait(timeout=60)
        said.seek(0)
        return subprocess.CompletedProcess(args, collector.returncode, "", said.read()), held


def read_to(positions: Positions, ends: list[int]) -> bool:
    """Whether ``positions`` reach each of ``ends`` (file sizes, sorted)."""
    offsets = [p["offset"] for p in positions]
    return all(offsets.count(end) >= ends.count(end) for end in ends)


def wait_until(collector: subprocess.Popen[str], spool: Path,
               reached: Callable[[Positions], bool], *, poll: float, timeout: float) -> bool:
    """Whether ``reached`` held of ``collector``'s spool positions within ``timeout``
    seconds, its spool looked at every ``poll`` seconds; False when it ended first or the
    time ran out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and collector.poll() is None:
        positions = spool_status(spool).get("positions", [])
        assert isinstance(positions, list)
        if reached(positions):
            return True
        time.sleep(poll)
    return False


def wait_read(collector: subprocess.Popen[str], spool: Path, files: list[Path], *,
              poll: float = 0.1, timeout: float = 60) -> bool:
    """Whether ``collector`` sealed each of ``files`` to its end (its spool says so) within
    ``timeout`` seconds, its spool looked at every ``poll`` seconds."""
    ends = sorted(path.stat().st_size for path in files)
    return wait_until(collector, spool, lambda positions: read_to(positions, ends), poll=poll,
                      timeout=timeout)


def spooled(spool: Path) -> list[pb.Batch]:
    """The batches sealed in ``spool`` and not yet delivered, in sequence order."""
    with contextlib.closing(sqlite3.connect(spool / "spool.sqlite3")) as db:
        rows = db.execute("SELECT payload FROM batches ORDER BY sequence").fetchall()
    return [pb.Batch.FromString(payload) for (payload,) in rows]


def spool_status(spool: Path) -> dict[str, object]:
    """``spool status`` of ``spool``; empty while a collector is still creating it (no
    database yet, or no tables yet)."""
    done = run(HOST_TARGET, "spool", "status", str(spool))
    if done.returncode != 0:
        assert b"has no tables yet" in done.stderr or b"not found" in done.stderr, done.stderr
        return {}
    shown: dict[str, object] = json.loads(done.stdout)
    return shown
