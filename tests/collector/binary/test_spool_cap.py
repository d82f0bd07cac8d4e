"""The spool's cap (TUNEPLANE_TELEMETRY_SPOOL_BYTES), against an ingest the test scripts:
while ingest refuses everything, the collector reads until its spool is full, then pauses
reading (said) and leaves the rest in the source; it keeps trying, however long the outage,
without giving up; once ingest takes batches, reading resumes and every point arrives."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import subprocess
import time
from pathlib import Path

import grpc

from tests.collector.binary.scripted_ingest import scripted_ingest
from tests.support.collector_binary import HOST_TARGET, run
from tests.support.processes import collector_args
from tests.support.truth import write_jsonl
from tuneplane.telemetry.v1.identity import MemberKey

CAP = 100_000
#: Longer than one round of the sender's retries (5 s): an outage it must outlast.
OUTAGE = 7.0


def largest_batch(spool: Path) -> int:
    with contextlib.closing(sqlite3.connect(f"file:{spool / 'spool.sqlite3'}?mode=ro",
                                            uri=True)) as db:
        (size,) = db.execute("SELECT max(length(payload)) FROM batches").fetchone()
    return int(size)


def test_a_full_spool_pauses_reading_until_ingest_takes_batches_and_nothing_is_lost(
        tmp_path: Path, tls_dir: Path) -> None:
    source = tmp_path / "m.jsonl"
    truth = write_jsonl(source, range(20_000), ["loss", "acc"])
    spool, log = tmp_path / "spool", tmp_path / "collector.log"
    (tmp_path / "token").write_text("t\n")
    with scripted_ingest(tls_dir) as ingest:
        ingest.outage = grpc.StatusCode.UNAVAILABLE
        with log.open("wb") as out:
            collector = subprocess.Popen(
                [*collector_args(ingest.port, tls_dir, tmp_path / "token",
                                 MemberKey("r", 1, "rank-0"), spool, {"train": source},
                                 "--max-batch-points", "1000"), "--exit-when-idle"],
                stderr=out, env={**os.environ, "TUNEPLANE_TELEMETRY_SPOOL_BYTES": str(CAP)})
        try:
            deadline = time.monotonic() + 60
            while "reading paused" not in log.read_text():
                assert collector.poll() is None, log.read_text()
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.1)
            ingest.wait_for(lambda calls: bool(calls) and calls[-1].at - calls[0].at > OUTAGE,
                            timeout=60)
            assert collector.poll() is None, log.read_text()  # still trying, not given up
            shown = json.loads(run(HOST_TARGET, "spool", "status", str(spool)).stdout)
            held = shown["pending"]["bytes"]
            assert CAP <= held < CAP + largest_batch(spool), shown  # at most one batch over
            (position,) = shown["positions"]
            assert position["offset"] < source.stat().st_size  # the rest waits in the source
            assert ingest.delivered() == {}
            ingest.outage = None
            assert collector.wait(timeout=120) == 0, log.read_text()
        finally:
            if collector.poll() is None:
                collector.kill()
                collector.wait()
    assert ingest.delivered() == truth
    refused = [call for call in ingest.calls if call.answer.code is not None]
    taken = {call.payload for call in ingest.calls if call.answer.acked}
    assert {call.payload for call in refused} <= taken  # what was refused went again, as it was
