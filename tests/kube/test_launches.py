"""Kubernetes launches on the local cluster, through the release's web API and control: a
run's attempt as an Indexed Job of two pods, each a training container of the stand-in
Python image beside the collector as a native sidecar (the static binary's FROM scratch
image, made from the artifact control names). Each rank writes JSONL and a TensorBoard event
file; both members' curves are read back exactly, the attempt ends finished with its Job,
each sidecar reports its drain with nothing left, and once the projectors' group has
committed past the topic's end (the barrier) no point is stored twice."""

from __future__ import annotations

import json
import shutil
import time
import uuid
from pathlib import Path

import pytest

from tests.kube import trainer
from tests.kube.launching import (
    ARTIFACT,
    TRAINING_IMAGE,
    call,
    launched,
    pod_logs,
    shown,
    training,
    written,
)
from tests.kube.release import GROUP, TOPIC, Release, show_state
from tests.support.charts import image_into_cluster, projected_to_end
from tests.support.collector_binary import HOST_TARGET, artifact
from tests.support.kube import kubectl
from tuneplane.telemetry.v1.identity import MemberKey

pytestmark = [pytest.mark.usefixtures("kube_cluster", "docker_engine"), pytest.mark.timeout(900)]


def test_a_two_index_job_delivers_both_members_exactly_and_ends_finished(
        release: Release, tmp_path: Path) -> None:
    web = release.web()
    run_id = f"kube-{uuid.uuid4().hex[:8]}"
    call(web, "POST", "/runs", {"run_id": run_id, "integration": ARTIFACT})
    started = time.monotonic()
    queued = call(web, "POST", f"/runs/{run_id}/kubernetes-launches", {
        "indexes": 2, "image": TRAINING_IMAGE,
        "command": ["python3", "-c", Path(trainer.__file__).read_text()],
        "requests": {"cpu": "50m", "memory": "64Mi"}})
    assert queued["members"] == ["rank-0", "rank-1"]
    try:
        launch = launched(web, run_id)
    except AssertionError:
        show_state(release.jobs_namespace)
        raise
    release.timed("a 2-index Job launched, run and ended", started)
    assert (launch["backend"], launch["attempt_state"], launch["job_state"]) == (
        "kubernetes", "finished", "COMPLETED"), shown(launch)
    nodes = {c["node"]: c for c in launch["collectors"]}
    assert sorted(nodes) == [0, 1], shown(launch)
    # What Kubernetes said of the Job and its pods: kept with the launch (the run page).
    said = {(e["object"].split("/")[0], e["reason"]) for e in launch["events"]}
    assert {("job", "SuccessfulCreate"), ("pod", "Scheduled"), ("pod", "Pulled"),
            ("pod", "Started")} <= said, launch["events"]
    for collector in nodes.values():
        assert (collector["refused"], collector["reported"], collector["undelivered"]) == (
            None, True, 0), collector
    job = json.loads(kubectl("-n", release.jobs_namespace, "get", "job",
                             f"tuneplane-launch-{launch['launch_id']}", "-o", "json"))
    assert job["metadata"]["uid"] == launch["job_id"]
    for rank in (0, 1):
        member = MemberKey(run_id, 1, f"rank-{rank}")
        for source, truth in trainer.truth(rank).items():
            web.wait_exact(member, f"{source}-{rank}", truth)
    projected_to_end(release.namespace, "stores-kafka-0", GROUP, TOPIC)
    for rank in (0, 1):  # past the barrier: a late duplicate would be stored by now
        member = MemberKey(run_id, 1, f"rank-{rank}")
        for source, truth in trainer.truth(rank).items():
            web.wait_exact(member, f"{source}-{rank}", truth, seconds=0)


def test_a_hostile_training_command_reaches_nothing_of_the_sidecars_nor_the_cluster(
        release: Release) -> None:
    """The training container tries the API server, the service account, the ticket, the
    spool, the kubelet's volumes, the sidecar's process and root, and links its source to
    the ticket: each fails, and the sidecar never reads the ticket as telemetry."""
    web = release.web()
    run_id = f"kube-hostile-{uuid.uuid4().hex[:8]}"
    artifact = {"version": 1, "sources": [
        {"id": "metrics", "kind": "jsonl", "path": "rank-0/metrics.jsonl", "owner": "rank-0"}]}
    call(web, "POST", "/runs", {"run_id": run_id, "integration": artifact})
    queued = call(web, "POST", f"/runs/{run_id}/kubernetes-launches", {
        "indexes": 1, "image": TRAINING_IMAGE,
        "command": ["python3", "-c", (Path(__file__).parent / "hostile.py").read_text()]})
    launch = launched(web, run_id)
    assert launch["attempt_state"] == "finished", shown(launch)
    said = pod_logs(release, queued["kubernetes_launch"], "training").strip().splitlines()
    outcome = json.loads(said[-1])
    assert outcome["uid"] == 1000
    tried = outcome["tried"]
    assert set(tried) == {"service account token", "the API server's secrets", "the ticket",
                          "the spool", "the kubelet's pod volumes", "another process",
                          "root", "a source linked to the ticket"}
    for what, came in tried.items():
        if what == "a source linked to the ticket":
            assert came.startswith("done"), came  # its own directory: the link is made
        else:
            assert came.startswith("failed"), f"{what}: {came}"
    assert "FileNotFoundError" in tried["service account token"]
    assert "HTTP 401" in tried["the API server's secrets"] or \
        "HTTP 403" in tried["the API server's secrets"], tried
    assert "PermissionError" in tried["root"]
    assert "never read from" in pod_logs(release, queued["kubernetes_launch"],
                                         "tuneplane-collector")
    member = MemberKey(run_id, 1, "rank-0")
    assert web.series(member, "metrics", "loss") == []


def test_a_pod_deleted_mid_run_fails_its_attempt_and_what_it_wrote_is_stored_once(
        release: Release) -> None:
    """The pod is deleted after two bursts of five: the training container is stopped, its
    sidecar drains what was written and reports, the Job fails and so does the attempt,
    saying why; what is stored is what was written by then, each point once."""
    web = release.web()
    run_id = f"kube-deleted-{uuid.uuid4().hex[:8]}"
    artifact = {"version": 1, "sources": [
        {"id": "metrics-0", "kind": "jsonl", "path": "rank-0/metrics.jsonl", "owner": "rank-0"},
        {"id": "tb-0", "kind": "tensorboard", "path": "rank-0/tb", "owner": "rank-0"}]}
    launch_id = training(web, run_id, artifact, 1, pause=4)
    written(release, launch_id, "burst 1 written")
    kubectl("-n", release.jobs_namespace, "delete", "pod", "-l",
            f"tuneplane.dev/launch={launch_id}", "--wait=false")
    launch = launched(web, run_id)
    assert (launch["attempt_state"], launch["job_state"]) == ("failed", "FAILED"), shown(launch)
    assert launch["detail"].startswith("job failed"), shown(launch)
    assert len(launch["collectors"]) == 1, shown(launch)
    (collector,) = launch["collectors"]
    assert (collector["reported"], collector["undelivered"]) == (True, 0), collector
    projected_to_end(release.namespace, "stores-kafka-0", GROUP, TOPIC)
    member = MemberKey(run_id, 1, "rank-0")
    per = trainer.STEPS // trainer.BURSTS
    for source, tag in (("metrics", "loss"), ("metrics", "accuracy"), ("tb", "loss")):
        stored = len(web.series(member, f"{source}-0", tag))
        assert 2 * per <= stored < trainer.STEPS, (source, tag, stored)
        # A prefix of what was written, each point once: the lines and records the
        # training container had written when it was stopped.
        expected = trainer.truth(0, stored)[source][("", tag)]
        web.wait_exact(member, f"{source}-0", {("", tag): expected}, seconds=0)


def test_a_tampered_collector_image_is_refused_with_the_reason_and_nothing_runs(
        release: Release, tmp_path: Path) -> None:
    """The image control names (tuneplane-collector:<digest>) replaced by one whose binary is
    not the artifact's (the real one with bytes appended: it still runs): its sidecar refuses
    before it redeems anything, the attempt fails saying so, the Job is deleted, and the
    training container never started."""
    digest = release.collector_digest
    real = tmp_path / "real"
    tampered = tmp_path / "tampered"
    tampered.mkdir()
    made = artifact(HOST_TARGET, real)
    shutil.copy(made / "manifest.json", tampered / "manifest.json")
    (tampered / "tuneplane-collector").write_bytes(
        (made / "tuneplane-collector").read_bytes() + b"\0tampered")
    (tampered / "tuneplane-collector").chmod(0o755)
    image_into_cluster(tampered, f"tuneplane-collector:{digest}")
    try:
        web = release.web()
        run_id = f"kube-tampered-{uuid.uuid4().hex[:8]}"
        call(web, "POST", "/runs", {"run_id": run_id, "integration": ARTIFACT})
        queued = call(web, "POST", f"/runs/{run_id}/kubernetes-launches", {
            "indexes": 2, "image": TRAINING_IMAGE,
            "command": ["python3", "-c", Path(trainer.__file__).read_text()]})
        launch = launched(web, run_id)
    finally:
        image_into_cluster(made, f"tuneplane-collector:{digest}")
    assert (launch["attempt_state"], launch["job_state"]) == ("failed", "FAILED"), shown(launch)
    assert "does not match its manifest's sha256 (tampered)" in launch["detail"], shown(launch)
    assert launch["collectors"] == []  # no ticket redeemed
    deadline = time.monotonic() + 60
    while kubectl("-n", release.jobs_namespace, "get", "job", "-l",
                  f"tuneplane.dev/launch={queued['kubernetes_launch']}", "-o", "name").strip():
        assert time.monotonic() < deadline, "the refused launch's Job was not deleted"
        time.sleep(0.5)
