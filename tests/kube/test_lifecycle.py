"""The chart's data-lifecycle CronJobs on the local cluster: Jobs made from them (the
release suspends their schedules, so nothing runs unasked) reach the stores the way their
NetworkPolicies let them, and do their work on a run sent through the release: retention
deletes it (its project keeps runs a day; the Job judges as of 2100, undo window 0), the
archive writes the topic to the object store and trims it, and the purge removes the run's
rows and prunes its batches from the archive."""

from __future__ import annotations

import json
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.kube.launching import call
from tests.kube.release import GROUP, TOPIC, Release
from tests.support.charts import projected_to_end
from tests.support.kube import kubectl
from tests.support.readback import jsonl_truth
from tuneplane.telemetry.v1.identity import MemberKey

pytestmark = [pytest.mark.usefixtures("kube_cluster", "docker_engine"), pytest.mark.timeout(900)]


def job_from(release: Release, cronjob: str, args: list[str] | None = None,
             seconds: float = 300) -> dict[str, Any]:
    """A Job made from the release's ``cronjob`` (with ``args`` instead of its own), run to
    its end; what it printed last, as JSON."""
    name = f"{cronjob}-{uuid.uuid4().hex[:6]}"
    job = json.loads(kubectl("-n", release.namespace, "create", "job", name,
                             f"--from=cronjob/tuneplane-{cronjob}", "--dry-run=client",
                             "-o", "json"))
    if args is not None:
        job["spec"]["template"]["spec"]["containers"][0]["args"] = args
    kubectl("-n", release.namespace, "create", "-f", "-", input=json.dumps(job))
    deadline = time.monotonic() + seconds
    while True:
        status = json.loads(kubectl("-n", release.namespace, "get", "job", name, "-o",
                                    "json"))["status"]
        if status.get("succeeded") or status.get("failed"):
            break
        assert time.monotonic() < deadline, f"job {name} did not end in {seconds} s: {status}"
        time.sleep(1)
    said = kubectl("-n", release.namespace, "logs", f"job/{name}")
    assert status.get("succeeded") == 1, f"job {name} failed: {status}\n{said[-3000:]}"
    return dict(json.loads(said.strip().splitlines()[-1]))


def test_the_lifecycle_cronjobs_delete_archive_and_purge_a_run(
        release: Release, tmp_path: Path) -> None:
    web = release.web()
    project, run_id = f"life-{uuid.uuid4().hex[:6]}", f"life-{uuid.uuid4().hex[:8]}"
    member = MemberKey(run_id, 1, "rank-0")
    call(web, "POST", "/projects", {"name": project})
    call(web, "POST", "/runs", {"run_id": run_id, "project": project, "integration": {
        "version": 1, "sources": [
            {"id": "train", "kind": "jsonl", "path": "m.jsonl", "owner": "rank-0"}]}})
    truth = jsonl_truth(tmp_path / "m.jsonl", range(2_000))
    sent = subprocess.run([*release.send(member, {"train": tmp_path / "m.jsonl"},
                                         "--max-batch-points", "500"), "--exit-when-idle"],
                          capture_output=True, text=True, timeout=300)
    assert sent.returncode == 0, sent.stderr[-3000:]
    projected_to_end(release.namespace, "stores-kafka-0", GROUP, TOPIC)
    web.wait_exact(member, "train", truth, seconds=60)
    release.admin("project-retention", project, "--keep-runs-days", "1")

    started = time.monotonic()
    deleted = job_from(release, "retention", ["retention", "--undo-seconds", "0",
                                              "--now", "2100-01-01T00:00:00+00:00"])
    assert deleted["by_project"].get(project) == [run_id], deleted
    assert web.series(member, "train", "loss") == []  # hidden at once
    archived = job_from(release, "archive")
    assert archived["records"] >= 4, archived  # at least this run's batches of 500
    assert archived["trimmed"], archived  # every group has consumed: the topic is trimmed
    purged = job_from(release, "purge")
    assert purged["deletions"] >= 1, purged
    assert purged["rows"] > 0, purged
    assert purged["archive"]["records_removed"] >= 4, purged  # its batches left the archive
    again = job_from(release, "purge")
    assert (again["deletions"], again["archive"]["records_removed"]) == (0, 0), again
    release.timed("the lifecycle's three Jobs and a second purge", started)
