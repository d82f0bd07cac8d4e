"""A spool whose filesystem fills (a small tmpfs here): reading pauses while less than the
room the sender's deletions need is free (``spool::room``, 8 MiB), and says so once; nothing
sealed is lost or damaged, even with the filesystem then filled to its last byte by another
writer; once ingest takes batches (their space freed) reading goes on until every line is
delivered, once."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from tests.collector.binary.scripted_ingest import collecting, scripted_ingest
from tests.support.collector_binary import HOST_TARGET, run
from tests.support.truth import write_jsonl


@pytest.fixture
def small_filesystem(tmp_path: Path) -> Iterator[Path]:
    """A 12 MiB tmpfs (mounting needs root, as the suite's other system tests do)."""
    place = tmp_path / "small"
    place.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=12m,mode=0700", "tmpfs", str(place)],
                   check=True)
    try:
        yield place
    finally:
        subprocess.run(["umount", "-l", str(place)], check=True)


def fill(path: Path) -> None:
    """``path`` written until its filesystem has no byte left (ENOSPC)."""
    with path.open("wb") as out:
        try:
            while True:
                out.write(b"\0" * (1 << 16))
                out.flush()
        except OSError as exc:
            assert exc.errno == 28, exc  # ENOSPC


def test_a_filling_filesystem_pauses_reading_loses_nothing_and_reading_resumes(
        tmp_path: Path, tls_dir: Path, small_filesystem: Path) -> None:
    source = tmp_path / "m.jsonl"
    truth = write_jsonl(source, range(120_000), ["loss", "acc"])  # sealed: far over 4 MiB
    spool = small_filesystem / "spool"
    with scripted_ingest(tls_dir) as ingest:
        ingest.outage = grpc.StatusCode.UNAVAILABLE
        with collecting(ingest, tls_dir, tmp_path, spool, source, "--max-batch-points", "5000",
                        env={"TUNEPLANE_TELEMETRY_SPOOL_BYTES": str(1 << 30)}) as collector:
            collector.wait_until(lambda: "less than 8 MiB free" in collector.said(), 120)
            fill(small_filesystem / "filler")  # another writer takes every byte left
            time.sleep(1.0)  # the reader, paused, looks again and again: said once
            assert collector.said().count("reading pauses") == 1, collector.said()
            status = run(HOST_TARGET, "spool", "status", str(spool))
            assert status.returncode == 0, status.stderr  # readable, not damaged
            (position,) = json.loads(status.stdout)["positions"]
            assert position["offset"] < source.stat().st_size  # the rest waits in the source
            assert ingest.delivered() == {}
            (small_filesystem / "filler").unlink()
            ingest.outage = None
            assert collector.ended(timeout=240) == 0, collector.said()
    said = collector.said()
    assert "has room again: reading goes on" in said, said
    assert ingest.delivered() == truth
    sent = [(chunk.tag, s) for call in ingest.calls if call.answer.acked
            for chunk in call.batch.chunks for s in chunk.steps]
    assert len(sent) == len(set(sent)) == len(truth)  # every point once
