"""``run --read-as``: the reader that opens sources as the training user is that user's
process, so the user may stop it (SIGSTOP). A stopped reader answers nothing; the collector
gives up on it after its timeout, kills and reaps it, starts another, and reading goes on."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

from tests.support.collector_binary import HOST_TARGET, run, unreachable_args
from tests.support.truth import write_jsonl
from tests.support.users import public_place, system_user

#: The collector's patience with a reader (TUNEPLANE_COLLECTOR_READER_SECONDS, 10 s unless
#: set: 2 s here), and room for a slow host.
PATIENCE = 2
REPLACED_WITHIN = PATIENCE + 30


def offsets(spool: Path) -> dict[str, int]:
    done = run(HOST_TARGET, "spool", "status", str(spool))
    if done.returncode != 0:
        return {}
    return {p["source"]: p["offset"] for p in json.loads(done.stdout)["positions"]}


def readers(pid: int) -> list[int]:
    """The children of every thread of ``pid`` (a reader restarted is a reading thread's)."""
    return sorted(int(child) for task in Path(f"/proc/{pid}/task").iterdir()
                  for child in (task / "children").read_text().split())


def test_a_reader_the_user_stops_is_replaced_and_reading_goes_on(tmp_path: Path,
                                                                 tls_dir: Path) -> None:
    with system_user() as user, public_place() as where:
        first, later = where / "first.jsonl", where / "later.jsonl"
        write_jsonl(first, range(5), ["loss"])
        first.chmod(0o644)
        spool, log = tmp_path / "spool", tmp_path / "collector.log"
        with log.open("wb") as out:
            collector = subprocess.Popen(
                unreachable_args(tmp_path, tls_dir, "--source", f"first={first}", "--source",
                                 f"later={later}", "--read-as", user.pw_name),
                stderr=out, env={**os.environ, "TUNEPLANE_TELEMETRY_DRAIN_SECONDS": "1",
                                              "TUNEPLANE_COLLECTOR_READER_SECONDS": str(PATIENCE)})
        try:
            deadline = time.monotonic() + 30
            while offsets(spool).get("first") != first.stat().st_size:
                assert collector.poll() is None, log.read_text()
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.05)
            [reader] = readers(collector.pid)
            subprocess.run(["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}",
                            "--clear-groups", "kill", "-STOP", str(reader)], check=True)
            while "State:\tT (stopped)" not in Path(f"/proc/{reader}/status").read_text():
                assert time.monotonic() < deadline, "the reader was not stopped"
                time.sleep(0.01)
            write_jsonl(later, range(7), ["acc"])
            later.chmod(0o644)
            deadline = time.monotonic() + REPLACED_WITHIN
            while offsets(spool).get("later") != later.stat().st_size:
                assert collector.poll() is None, log.read_text()
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.1)
            [again] = readers(collector.pid)
            assert again != reader
            assert not Path(f"/proc/{reader}").exists()  # killed and reaped
        finally:
            collector.send_signal(signal.SIGTERM)
            collector.wait(timeout=60)
    said = log.read_text()
    assert f"the reader of sources as {user.pw_name} was gone; started it again" in said, said
