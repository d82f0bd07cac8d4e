"""Ingest under hundreds of concurrent collectors: past its call limit it answers
RESOURCE_EXHAUSTED (collectors back off and resend) and its memory stays bounded; the
throughput and latency figures are printed (bench/load.py prints the fuller set)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import load
from tests.support.environment import Endpoints, free_port
from tests.support.processes import Process, start_ingest


@pytest.fixture
def capped_ingest(initialised: Endpoints, tls_dir: Path, tmp_path: Path) -> Iterator[Process]:
    process = start_ingest(initialised, tls_dir, free_port(), tmp_path / "ingest.log",
                           "--max-concurrent-rpcs", "32")
    yield process
    process.stop()


async def test_overload_is_refused_with_resource_exhausted_and_memory_stays_bounded(
        initialised: Endpoints, capped_ingest: Process, tls_dir: Path, run_id: str) -> None:
    plan = load.Plan(f"localhost:{capped_ingest.port}", tls_dir / "ca.pem",
                     initialised.jwt_secret, run_id, collectors=200, processes=2, seconds=6.0,
                     points=500)
    assert capped_ingest.proc is not None
    report = await asyncio.to_thread(load.run, plan, capped_ingest.proc.pid)
    print("\n" + "\n".join(report.lines(plan)))
    codes = report.outcome.codes
    assert set(codes) <= {"OK", "RESOURCE_EXHAUSTED"}, codes  # no other failure
    assert codes["RESOURCE_EXHAUSTED"] > 0  # the limit was reached and said so
    assert codes["OK"] > 0
    assert report.rss_peak_kib - report.rss_start_kib < 256 * 1024  # bounded, not growing
    assert capped_ingest.proc.poll() is None
