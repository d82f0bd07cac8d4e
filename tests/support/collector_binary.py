"""The collector's static binaries (collector/binary), built by scripts/collector-binary
before pytest (``TUNEPLANE_COLLECTOR_BINARY_DIR``, cargo's target directory): one per
target, the aarch64 one run here under Debian's qemu-user-static."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

#: Each target and what runs its binary on this (x86_64) host.
TARGETS = {"x86_64-unknown-linux-musl": (), "aarch64-unknown-linux-musl": ("qemu-aarch64-static",)}
#: This host's own target.
HOST_TARGET = "x86_64-unknown-linux-musl"


def binary(target: str) -> Path:
    built = os.environ.get("TUNEPLANE_COLLECTOR_BINARY_DIR", "")
    if not built:
        pytest.fail("TUNEPLANE_COLLECTOR_BINARY_DIR is not set: scripts/test builds the "
                    "binaries (scripts/collector-binary) and sets it", pytrace=False)
    path = Path(built) / target / "release" / "tuneplane-collector"
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
    built = os.environ.get("TUNEPLANE_COLLECTOR_BINARY_DIR", "")
    path = Path(built) / "failpoints" / "tuneplane-collector"
    if not built or not path.is_file():
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
                    *extra: str, read: list[Path] | None = None,
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
            "--max-batch-points", "250", *extra]
    for source_id, path in sources.items():
        args += ["--source", f"{source_id}={path}"]
    ends = sorted(path.stat().st_size for path in (read or list(sources.values())))
    collector = subprocess.Popen(args, stderr=subprocess.PIPE, text=True, env={
        **os.environ, "TUNEPLANE_TELEMETRY_DRAIN_SECONDS": "1"})
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and collector.poll() is None:
        status = run("x86_64-unknown-linux-musl", "spool", "status", str(spool))
        if status.returncode == 0:
            offsets = [p["offset"] for p in json.loads(status.stdout)["positions"]]
            if all(offsets.count(end) >= ends.count(end) for end in ends):
                break
        time.sleep(0.1)
    collector.send_signal(signal.SIGTERM)
    _, stderr = collector.communicate(timeout=60)
    return subprocess.CompletedProcess(args, collector.returncode, "", stderr)
