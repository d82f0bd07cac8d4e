"""Node control saturated leaves telemetry pushes working, and the reverse: separate
processes, call limits and database pools. Figures are printed (bench/isolation.py prints
the fuller set); what is asserted is that every timed call succeeds while the flooded
listener turns excess calls away with RESOURCE_EXHAUSTED."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pytest

from tests.isolation import listeners, measure
from tests.support.environment import Endpoints, free_port
from tests.support.processes import Process, launch_env, start_control, start_ingest
from tuneplane.common.tokens import TokenSigner
from tuneplane.telemetry.v1.identity import MemberKey


@pytest.fixture
def small_control(initialised: Endpoints, ingest: Process, tls_dir: Path,
                  tmp_path: Path) -> Iterator[Process]:
    process = start_control(tls_dir, free_port(), tmp_path / "control.log",
                            launch_env(ingest.port, tmp_path / "spool", tmp_path / ("0" * 64)),
                            "--max-concurrent-rpcs", "16", "--db-pool-size", "4")
    yield process
    process.stop()


@pytest.fixture
def small_ingest(initialised: Endpoints, tls_dir: Path, tmp_path: Path) -> Iterator[Process]:
    # The flood is one member's: its own bound lifted, so the process-wide one is reached.
    process = start_ingest(initialised, tls_dir, free_port(), tmp_path / "ingest.log",
                           "--max-concurrent-rpcs", "16",
                           env={"TUNEPLANE_INGEST_CALLS_PER_TOKEN": "1000"})
    yield process
    process.stop()


async def test_saturated_node_control_leaves_telemetry_pushes_working(
        small_control: Process, ingest: Process, tls_dir: Path, db: asyncpg.Connection,
        signer: TokenSigner, run_id: str) -> None:
    member = MemberKey(run_id, 1, "rank-0")
    parties = await listeners(small_control.port, ingest.port, tls_dir, db, signer, member,
                              calls=60)
    result = await measure(parties.telemetry, "push", parties.flooding_node, "heartbeat",
                           calls=60, concurrency=150, member=member)
    print("\n" + result.report("telemetry push", "Node control"))
    assert result.flood_codes.get("RESOURCE_EXHAUSTED", 0) > 0  # control was saturated
    assert result.flood_codes.get("OK", 0) > 0
    assert len(result.flooded) == 60  # and every push in the meantime was made durable


async def test_saturated_telemetry_leaves_node_control_working(
        small_ingest: Process, small_control: Process, tls_dir: Path, db: asyncpg.Connection,
        signer: TokenSigner, run_id: str) -> None:
    member = MemberKey(run_id, 1, "rank-0")
    parties = await listeners(small_control.port, small_ingest.port, tls_dir, db, signer,
                              member, calls=60)
    result = await measure(parties.nodes, "heartbeat", parties.telemetry, "push", calls=60,
                           concurrency=150, member=member)
    print("\n" + result.report("Node control heartbeat", "telemetry"))
    assert result.flood_codes.get("RESOURCE_EXHAUSTED", 0) > 0  # ingest was saturated
    assert result.flood_codes.get("OK", 0) > 0
    assert len(result.flooded) == 60  # and every heartbeat in the meantime was answered


def niceness(pid: int) -> int:
    """A process's nice value, field 19 of /proc/<pid>/stat (after the command's ')')."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat.rsplit(")", 1)[1].split()[16])


def test_node_control_runs_below_telemetry_in_cpu_priority(small_control: Process,
                                                           ingest: Process) -> None:
    """A flood of node calls takes CPU from telemetry on a shared host unless control
    yields: it lowers its own priority by 10 unless told otherwise (--nice)."""
    assert small_control.proc is not None
    assert ingest.proc is not None
    assert niceness(small_control.proc.pid) == niceness(ingest.proc.pid) + 10 == 10
    assert "nice 10" in small_control.log.read_text()
