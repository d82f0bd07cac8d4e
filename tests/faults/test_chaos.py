"""The fault suite on the shared stack (one Kafka broker, killed and restarted whole among
the faults): nothing lost, duplicated or altered (``chaos``).

A short version runs in CI. The full one (1,000,000+ points, three rounds of faults):

    TUNEPLANE_FAULTS_POINTS=1000000 TUNEPLANE_FAULTS_ROUNDS=3 uv run pytest tests/faults -s
"""

from __future__ import annotations

from pathlib import Path

from tests.faults import chaos
from tests.support.environment import Endpoints
from tests.support.processes import Process, start_projector


async def test_nothing_is_lost_duplicated_or_altered_under_a_seeded_fault_schedule(
        initialised: Endpoints, projector: Process, tls_dir: Path, tmp_path: Path,
        run_id: str) -> None:
    projectors = [projector, start_projector(initialised, tmp_path / "projector-2.log")]
    try:
        inflicted = await chaos.run(initialised, chaos.SHARED, projectors, tls_dir, tmp_path,
                                    run_id)
        assert "SIGKILL kafka, restarted" in inflicted
    finally:
        projectors[1].stop()
        assert projector.proc is not None
        if projector.proc.poll() is not None:  # the session's projector serves later tests
            projector.start()
