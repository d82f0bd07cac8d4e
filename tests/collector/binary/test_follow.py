"""The binary follows its sources: lines appended after it has read a file to its end, to a
file made later, and to an event file in a run directory made later, are all read; with the
sources' directories watched (inotify), and, where the mount table says a source is on a
network filesystem (whose writes on other hosts raise no event), by polling, said once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.support.collector_binary import HOST_TARGET, run, unreachable_args
from tests.support.truth import write_events, write_jsonl


def read_to(spool: Path) -> dict[tuple[str, str], int]:
    """Each source file's offset read to (none while the spool is being made)."""
    done = run(HOST_TARGET, "spool", "status", str(spool))
    if done.returncode != 0:
        return {}
    return {(p["source"], p["file"]): p["offset"] for p in json.loads(done.stdout)["positions"]}


def until_read(spool: Path, collector: subprocess.Popen[str],
               wanted: dict[tuple[str, str], int]) -> None:
    deadline = time.monotonic() + 60
    while any(read_to(spool).get(key) != offset for key, offset in wanted.items()):
        assert collector.poll() is None, collector.communicate()[1]
        assert time.monotonic() < deadline, (read_to(spool), wanted)
        time.sleep(0.05)


@pytest.mark.parametrize("filesystem", ["local", "network"])
def test_what_is_appended_or_made_later_is_read(
        tmp_path: Path, tls_dir: Path, filesystem: str) -> None:
    sources = tmp_path / "sources"
    (sources / "tb").mkdir(parents=True)
    first = write_jsonl(sources / "m.jsonl", range(100), ["loss"])
    table = tmp_path / "mountinfo"
    mounts = Path("/proc/self/mountinfo").read_text()
    if filesystem == "network":
        mounts += f"999 1 0:99 / {sources} rw - nfs4 server:/export rw\n"
    table.write_text(mounts)
    spool = tmp_path / "spool"
    collector = subprocess.Popen(
        unreachable_args(tmp_path, tls_dir, "--source", f"m={sources / 'm.jsonl'}",
                         "--source", f"later={sources / 'later.jsonl'}",
                         "--tensorboard", f"tb={sources / 'tb'}"),
        stderr=subprocess.PIPE, text=True,
        env={**os.environ, "TUNEPLANE_TELEMETRY_DRAIN_SECONDS": "1",
             "TUNEPLANE_COLLECTOR_MOUNT_TABLE": str(table)})
    try:
        until_read(spool, collector, {("m", ""): (sources / "m.jsonl").stat().st_size})
        more = write_jsonl(sources / "m.jsonl", range(100, 250), ["loss"], append=True)
        later = write_jsonl(sources / "later.jsonl", range(50), ["acc"])
        events = sources / "tb" / "run-1" / "events.out.tfevents.1.host"  # a new run
        write_events(events, [(step, {"lr": step / 10}) for step in range(40)])
        until_read(spool, collector, {
            ("m", ""): (sources / "m.jsonl").stat().st_size,
            ("later", ""): (sources / "later.jsonl").stat().st_size,
            ("tb", "run-1/events.out.tfevents.1.host"): events.stat().st_size})
    finally:
        collector.send_signal(signal.SIGTERM)
        _, stderr = collector.communicate(timeout=60)
    assert f"{len(first) + len(more) + len(later) + 40} points" in stderr, stderr
    polled = f"{sources} is on NFS: polled every 500ms"
    assert stderr.count(polled) == (1 if filesystem == "network" else 0), stderr
    assert "no inotify" not in stderr, stderr  # watched where the filesystem lets it be
