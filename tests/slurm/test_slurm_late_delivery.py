"""Late delivery on the local Slurm cluster: a job runs while ingest is unreachable, so
its node's drain leaves every batch in the members' spools; its end report names each
spool's tree and control answers with a deliver-only credential for it, kept in the spool
(0600) while the job's output says how to deliver it by hand. The user's next job on the
host, with ingest back, delivers those spools in the background: every point of the first
run once, the first job's node is listed as having left nothing (its spools' batches are in
the read models as delivered late), and the run page lists the batches as late."""

from __future__ import annotations

from pathlib import Path

import asyncpg
import pytest

from tests.slurm.test_slurm_launch import INTEGRATION, TWO_TASKS, assert_stored_exactly, truth
from tests.support.environment import Endpoints, free_port
from tests.support.kafka import projected_to_end
from tests.support.processes import Process, start_ingest
from tests.support.readmodels import curve_points
from tests.support.slurm import (
    collectors_of,
    job_output,
    launch,
    launch_of,
    slurm_control,
    tenant,
    wait_for,
)
from tuneplane.web.read import listings

pytestmark = pytest.mark.usefixtures("slurm_cluster")


async def test_what_a_jobs_drain_left_is_delivered_by_the_users_next_job_on_the_host(
        initialised: Endpoints, projector: Process, tls_dir: Path, collector_artifact: Path,
        tmp_path: Path, run_id: str, db: asyncpg.Connection) -> None:
    first, second = run_id, f"{run_id}-next"
    ingest_port = free_port()  # nothing listens there while the first job runs
    with tenant(collector_artifact, tls_dir) as who, slurm_control(
            tls_dir, ingest_port, who, tmp_path / "control.log",
            env={"TUNEPLANE_TELEMETRY_DRAIN_SECONDS": "2"}):
        launch(initialised, first, who, INTEGRATION, ["--steps", "300", "--seconds", "2"],
               *TWO_TASKS)
        row = wait_for(first, ended=True)
        output = job_output(row["job_id"], who.scratch)
        assert (row["job_state"], row["attempt_state"]) == ("COMPLETED", "finished"), output
        (collector,) = collectors_of(row)
        left = collector["undelivered_by_member"]
        assert isinstance(left, dict), row
        assert sorted(left) == ["rank-0", "rank-1"], row
        assert all(isinstance(n, int) and n > 0 for n in left.values()), row
        for member in left:
            spool = who.spool_root / first / "1" / member
            token = spool / "delivery-token"
            assert (token.stat().st_uid, token.stat().st_mode & 0o777) == (who.user.pw_uid,
                                                                           0o600)
            assert (f"the batches left in {spool} ({member}) are delivered by this user's "
                    "next Tuneplane job on this host") in output, output
            assert f"--token-file {token}" in output, output
        assert await curve_points(db, first) == []  # nothing reached ingest
        ingest = start_ingest(initialised, tls_dir, ingest_port, tmp_path / "ingest.log")
        try:
            launch(initialised, second, who, INTEGRATION,
                   ["--steps", "200", "--seconds", "6"], *TWO_TASKS)
            again = wait_for(second, ended=True)
            said = job_output(again["job_id"], who.scratch)
            assert (again["job_state"], again["attempt_state"]) == ("COMPLETED", "finished"), said
        finally:
            ingest.stop()
        tokens = sorted(who.spool_root.glob(f"{first}/1/*/delivery-token"))
        logs = {p.parent.name: p.read_text() for p in who.spool_root.glob(f"{first}/1/*/*.log")}
    assert tokens == [], (tokens, logs)
    assert "delivered late what" in said, (said, logs)
    await projected_to_end(initialised.kafka_bootstrap)  # a duplicate would be stored by now
    # The node is listed as having left nothing: every batch of its spools is in the read
    # models as delivered late (what ingest took, not what the deliverer said).
    (reported,) = collectors_of(launch_of(first))
    assert (reported["undelivered"], reported["delivered_late"]) == (0, sum(left.values())), (
        reported, said, logs)
    assert reported["undelivered_by_member"] == {"rank-0": 0, "rank-1": 0}, reported
    await assert_stored_exactly(db, first, truth(300))
    await assert_stored_exactly(db, second, truth(200))
    late = await listings.late(db, first, 1, 100)
    assert len(late) == sum(left.values())
    assert sum(b["points"] for b in late) == len(truth(300))
