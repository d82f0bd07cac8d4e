"""Kubernetes launches disrupted on the local cluster: a pod evicted mid-run (the eviction
API, as a node drain or the scheduler's preemption does it) ends its attempt preempted and
the launch runs again as the next attempt, in a new Job; a spool grant that turns out to be
a network filesystem (SeaweedFS's FUSE mount of the test stack's filer, a real one, mounted
on the node where the grant's directory is) is refused by the sidecar, with no fallback."""

from __future__ import annotations

import contextlib
import json
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from scripts.stack.common import ports
from scripts.stack.s3 import weed_binary
from tests.kube import trainer
from tests.kube.launching import (
    ARTIFACT,
    TRAINING_IMAGE,
    call,
    launched,
    launches_ended,
    pod_logs,
    training,
    written,
)
from tests.kube.release import (
    GROUP,
    NETWORK_GRANT,
    NETWORK_GRANT_PROJECT,
    TOPIC,
    Release,
    show_state,
)
from tests.support.charts import projected_to_end
from tests.support.kube import kubectl, run_kubectl
from tuneplane.telemetry.v1.identity import MemberKey

# ``endpoints``: the test stack (scripts/services) whose SeaweedFS filer is mounted.
pytestmark = [pytest.mark.usefixtures("kube_cluster", "docker_engine", "endpoints"),
              pytest.mark.timeout(900)]


def evict(namespace: str, pod: str) -> None:
    """The eviction API, as ``kubectl drain`` calls it for each pod of a node."""
    body = json.dumps({"apiVersion": "policy/v1", "kind": "Eviction",
                       "metadata": {"name": pod, "namespace": namespace}})
    done = run_kubectl(("create", "--raw", f"/api/v1/namespaces/{namespace}/pods/{pod}/eviction",
                        "-f", "-"), body, 60)
    assert done.returncode == 0, done.stderr


def test_a_pod_evicted_mid_run_preempts_its_attempt_and_a_new_job_runs_the_next(
        release: Release) -> None:
    """Index 0's pod is evicted after two of five bursts: the Job fails by its pod failure
    policy, attempt 1 ends preempted (each sidecar drained and reported), and the launch is
    queued again: attempt 2, a new Job, runs both ranks to the end. Attempt 1 holds a prefix
    of what was written, attempt 2 all of it, each point once past the barrier; what
    Kubernetes said of each Job is kept with its launch. Attempt 2 trains for longer than
    half the release's token life: each sidecar renews its credentials while it runs."""
    web = release.web()
    run_id = f"kube-evicted-{uuid.uuid4().hex[:8]}"
    first_id = training(web, run_id, ARTIFACT, 2, pause=3)
    written(release, first_id, "rank-0: burst 1 written")
    (pod,) = kubectl("-n", release.jobs_namespace, "get", "pods", "-o", "name", "-l",
                     f"tuneplane.dev/launch={first_id},"
                     "batch.kubernetes.io/job-completion-index=0").split()
    evict(release.jobs_namespace, pod.removeprefix("pod/"))
    try:
        first, second = launches_ended(web, run_id, 2, seconds=400)
    except AssertionError:
        show_state(release.jobs_namespace)
        raise
    assert (first["launch_id"], first["attempt"], first["attempt_state"],
            first["job_state"]) == (first_id, 1, "preempted", "PREEMPTED"), first
    assert "DisruptionTarget" in first["detail"] or "Eviction" in first["detail"], first
    assert first["detail"].endswith(
        f"queued again as launch {second['launch_id']}, attempt 2"), first
    assert sorted(c["node"] for c in first["collectors"]) == [0, 1]
    for collector in first["collectors"]:  # drained and reported within the grace period
        assert (collector["reported"], collector["undelivered"]) == (True, 0), collector
    said = {(e["object"].split("/")[0], e["reason"]) for e in first["events"]}
    assert ("job", "PodFailurePolicy") in said, first["events"]
    assert (second["attempt"], second["attempt_state"], second["job_state"]) == (
        2, "finished", "COMPLETED"), second
    assert second["job_id"] != first["job_id"]  # a Job of its own
    # Its sidecars trained longer than half a token's life: renewed while the Job ran.
    renewed = pod_logs(release, second["launch_id"], "tuneplane-collector")
    assert renewed.count("credentials renewed") >= 2, renewed  # both indexes
    projected_to_end(release.namespace, "stores-kafka-0", GROUP, TOPIC)
    for rank in (0, 1):
        for source, truth in trainer.truth(rank).items():
            web.wait_exact(MemberKey(run_id, 2, f"rank-{rank}"), f"{source}-{rank}", truth,
                           seconds=0)
        member = MemberKey(run_id, 1, f"rank-{rank}")
        for source, tag in (("metrics", "loss"), ("tb", "loss")):
            stored = len(web.series(member, f"{source}-{rank}", tag))
            assert stored < trainer.STEPS, (rank, source, stored)
            if rank == 0:
                assert stored >= 2 * trainer.STEPS // trainer.BURSTS, (source, stored)
            expected = trainer.truth(rank, stored)[source][("", tag)]
            web.wait_exact(member, f"{source}-{rank}", {("", tag): expected}, seconds=0)


@contextlib.contextmanager
def network_filesystem(where: Path) -> Iterator[str]:
    """A real network filesystem mounted at ``where``: SeaweedFS's FUSE client on the test
    stack's filer (``weed mount``); the mount table's type of it."""
    where.mkdir(parents=True, exist_ok=True)
    known = ports()
    log = where.with_suffix(".log").open("w")
    mount = subprocess.Popen(
        [str(weed_binary()), "mount", f"-filer=127.0.0.1:{known['weed_filer']}."
         f"{known['weed_filer_grpc']}", f"-dir={where}", "-dirAutoCreate", "-allowOthers",
         f"-filer.path=/kube-network-grant-{uuid.uuid4().hex[:8]}"],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            for line in Path("/proc/self/mountinfo").read_text().splitlines():
                fields = line.split(" - ")
                if fields[0].split()[4] == str(where):
                    yield fields[1].split()[0]
                    return
            assert mount.poll() is None, where.with_suffix(".log").read_text()
            assert time.monotonic() < deadline, "weed mount never mounted"
            time.sleep(0.2)
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False, capture_output=True)
        mount.terminate()
        mount.wait(timeout=30)
        log.close()


def test_a_spool_grant_on_a_network_filesystem_is_refused_with_its_reason(
        release: Release) -> None:
    """The project's grant is a node directory (``hostPath``) with a network filesystem
    mounted on it: the sidecar judges the spool from its mount table before it redeems,
    refuses naming the filesystem, the attempt fails saying so, and nothing falls back to
    the working volume: no training ran."""
    web = release.web()
    run_id = f"kube-network-{uuid.uuid4().hex[:8]}"
    artifact = {"version": 1, "sources": [
        {"id": "metrics-0", "kind": "jsonl", "path": "rank-0/metrics.jsonl", "owner": "rank-0"}]}
    call(web, "POST", "/projects", {"name": NETWORK_GRANT_PROJECT})
    call(web, "POST", "/runs", {"run_id": run_id, "project": NETWORK_GRANT_PROJECT,
                                "integration": artifact})
    with network_filesystem(NETWORK_GRANT) as mounted:
        assert mounted == "fuse.seaweedfs"
        queued = call(web, "POST", f"/runs/{run_id}/kubernetes-launches", {
            "indexes": 1, "image": TRAINING_IMAGE,
            "command": ["python3", "-c", Path(trainer.__file__).read_text()]})
        launch = launched(web, run_id)
    assert (launch["attempt_state"], launch["job_state"]) == ("failed", "FAILED"), launch
    (collector,) = launch["collectors"]
    assert "spool root refused: spool directory /var/spool/tuneplane is on network FUSE " \
           "(seaweedfs) (fuse.seaweedfs" in collector["refused"], collector
    assert "network FUSE (seaweedfs)" in launch["detail"], launch
    deadline = time.monotonic() + 60  # the refused launch's Job is deleted
    while kubectl("-n", release.jobs_namespace, "get", "job", "-l",
                  f"tuneplane.dev/launch={queued['kubernetes_launch']}", "-o", "name").strip():
        assert time.monotonic() < deadline, "the refused launch's Job was not deleted"
        time.sleep(0.5)
    assert web.series(MemberKey(run_id, 1, "rank-0"), "metrics-0", "loss") == []
