"""How a batch job's launch ended, in words (``job_follow.follow`` keeps them as the
launch's detail): the scheduler's state and exit code, what the job wrote, and what each of
its collectors refused, left undelivered, or never reported."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tuneplane.common.db import Connection

if TYPE_CHECKING:
    from tuneplane.controlplane.job_follow import JobSeen


async def ending(conn: Connection, launch_id: int, seen: JobSeen) -> str:
    """How the job ended, in words: Slurm's state and exit code, what its script wrote, and
    what its collectors refused, left undelivered, or never reported (a Kubernetes pod
    gone before its sidecar's drain ended: with an ``emptyDir`` spool, a destroyed one)."""
    words = [f"job {seen.state.lower()}"
             + (f" (exit {seen.exit_code})" if seen.exit_code not in ("", "0:0") else "")]
    if seen.comment:
        words.append(seen.comment[:1000])
    for r in await conn.fetch(
            "SELECT c.restart, c.node_index, c.refused, c.undelivered, c.detail, "
            "c.reported_at IS NOT NULL AS reported, l.scheduler, l.options->>'spool' AS "
            "spool FROM slurm_collectors c JOIN slurm_launches l USING (launch_id) WHERE "
            "c.launch_id = $1 AND (c.refused IS NOT NULL OR c.undelivered > 0 OR "
            "c.reported_at IS NULL) ORDER BY c.restart, c.node_index", launch_id):
        where = (f"index {r['node_index']}" if r["scheduler"] == "kubernetes"
                 else f"node {r['node_index']} (start {r['restart']})")
        if r["refused"] is not None:
            if r["refused"] not in seen.comment:  # the script's refusal says it already
                words.append(f"{where}: {r['refused']}")
        elif not r["reported"]:
            words.append(f"{where}: {unreported(r['spool'])}")
        else:
            words.append(f"{where}: {r['undelivered']} batches left in its spool: "
                         f"{r['detail']}")
    return "; ".join(words)[:4000]


def unreported(spool: str | None) -> str:
    """What a collector that never reported its drain's end left, by its spool's grant."""
    if spool == "emptyDir":
        return ("its pod was gone before its sidecar reported: its spool, an emptyDir, was "
                "destroyed with it; what it held undelivered is lost")
    return "its collector never reported how its drain ended; its spool is where it ran"
