"""The spool's cap (TUNEPLANE_TELEMETRY_SPOOL_BYTES), against an ingest the test scripts:
while ingest refuses everything, the collector reads until its spool is full, then pauses
reading (said) and leaves the rest in the source; it keeps trying, however long the outage,
without giving up; once ingest takes batches, reading resumes and every point arrives."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from pathlib import Path

import grpc

from tests.collector.binary.scripted_ingest import collecting, scripted_ingest
from tests.support.collector_binary import HOST_TARGET, run
from tests.support.truth import write_jsonl

CAP = 100_000
#: One round of the sender's retries (TUNEPLANE_COLLECTOR_RETRY_SECONDS, 5 s unless set),
#: and an outage longer than it, which the collector must outlast.
RETRY = 1
OUTAGE = 2.5


def largest_batch(spool: Path) -> int:
    with contextlib.closing(sqlite3.connect(f"file:{spool / 'spool.sqlite3'}?mode=ro",
                                            uri=True)) as db:
        (size,) = db.execute("SELECT max(length(payload)) FROM batches").fetchone()
    return int(size)


def test_a_full_spool_pauses_reading_until_ingest_takes_batches_and_nothing_is_lost(
        tmp_path: Path, tls_dir: Path) -> None:
    source = tmp_path / "m.jsonl"
    truth = write_jsonl(source, range(20_000), ["loss", "acc"])
    spool = tmp_path / "spool"
    with scripted_ingest(tls_dir) as ingest:
        ingest.outage = grpc.StatusCode.UNAVAILABLE
        with collecting(ingest, tls_dir, tmp_path, spool, source, "--max-batch-points", "1000",
                        env={"TUNEPLANE_TELEMETRY_SPOOL_BYTES": str(CAP),
                             "TUNEPLANE_COLLECTOR_RETRY_SECONDS": str(RETRY)}) as collector:
            collector.wait_until(lambda: "reading paused" in collector.said())
            ingest.wait_for(lambda calls: bool(calls) and calls[-1].at - calls[0].at > OUTAGE,
                            timeout=60)
            assert collector.process.poll() is None, collector.said()  # still trying
            shown = json.loads(run(HOST_TARGET, "spool", "status", str(spool)).stdout)
            held = shown["pending"]["bytes"]
            assert CAP <= held < CAP + largest_batch(spool), shown  # at most one batch over
            (position,) = shown["positions"]
            assert position["offset"] < source.stat().st_size  # the rest waits in the source
            assert ingest.delivered() == {}
            ingest.outage = None
            assert collector.ended(timeout=120) == 0, collector.said()
    assert ingest.delivered() == truth
    refused = [call for call in ingest.calls if call.answer.code is not None]
    taken = {call.payload for call in ingest.calls if call.answer.acked}
    assert {call.payload for call in refused} <= taken  # what was refused went again, as it was
