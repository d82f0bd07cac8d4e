"""Kubernetes launches disrupted on the local cluster: a pod evicted mid-run (the eviction
API, as a node drain or the scheduler's preemption does it) ends its attempt preempted and
the launch runs again as the next attempt, in a new Job; a training container killed for
its memory fails its attempt, saying so beside what Kubernetes said of it."""

from __future__ import annotations

import json
import uuid

import pytest

from tests.kube import trainer
from tests.kube.launching import (
    ARTIFACT,
    TRAINING_IMAGE,
    call,
    launched,
    launches_ended,
    pod_logs,
    shown,
    training,
    written,
)
from tests.kube.release import GROUP, TOPIC, Release, show_state
from tests.support.charts import projected_to_end
from tests.support.kube import kubectl, run_kubectl
from tuneplane.telemetry.v1.identity import MemberKey

pytestmark = [pytest.mark.usefixtures("kube_cluster", "docker_engine"), pytest.mark.timeout(900)]


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
            first["job_state"]) == (first_id, 1, "preempted", "PREEMPTED"), shown(first)
    assert "has condition DisruptionTarget matching FailJob rule" in first["detail"], shown(first)
    assert first["detail"].endswith(
        f"queued again as launch {second['launch_id']}, attempt 2"), shown(first)
    assert sorted(c["node"] for c in first["collectors"]) == [0, 1]
    for collector in first["collectors"]:  # drained and reported within the grace period
        assert (collector["reported"], collector["undelivered"]) == (True, 0), collector
    said = {(e["object"].split("/")[0], e["reason"]) for e in first["events"]}
    assert ("job", "PodFailurePolicy") in said, first["events"]
    assert (second["attempt"], second["attempt_state"], second["job_state"]) == (
        2, "finished", "COMPLETED"), shown(second)
    made = json.loads(kubectl("-n", release.jobs_namespace, "get", "job",
                              f"tuneplane-launch-{second['launch_id']}", "-o", "json"))
    assert made["metadata"]["uid"] == second["job_id"]  # a Job of its own
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


def test_a_training_container_killed_for_its_memory_fails_its_attempt_saying_oomkilled(
        release: Release) -> None:
    """The training container allocates past its memory limit: the kernel kills it, the Job
    fails, and the attempt with it; the launch's detail and its events (the run page's)
    say OOMKilled, and the sidecar still drained what was written before and reported."""
    web = release.web()
    run_id = f"kube-oom-{uuid.uuid4().hex[:8]}"
    artifact = {"version": 1, "sources": [
        {"id": "metrics", "kind": "jsonl", "path": "metrics.jsonl", "owner": "rank-0"}]}
    call(web, "POST", "/runs", {"run_id": run_id, "integration": artifact})
    hungry = ("import json\n"
              "with open('metrics.jsonl', 'w') as f:\n"
              "    f.write(json.dumps({'step': 0, 'wall_time': 1.7e9, 'metrics': {'loss': 1.0}})"
              " + '\\n')\n"
              "held = [bytearray(1 << 20) for _ in range(1024)]\n")
    call(web, "POST", f"/runs/{run_id}/kubernetes-launches", {
        "indexes": 1, "image": TRAINING_IMAGE, "command": ["python3", "-c", hungry],
        "limits": {"memory": "96Mi"}})
    launch = launched(web, run_id)
    assert (launch["attempt_state"], launch["job_state"]) == ("failed", "FAILED"), shown(launch)
    assert "OOMKilled (exit 137)" in launch["detail"], shown(launch)
    ended = [e for e in launch["events"] if e["reason"] == "OOMKilled"]
    assert [e["message"] for e in ended] == ["container training exited 137"], launch["events"]
    assert len(launch["collectors"]) == 1, shown(launch)
    (collector,) = launch["collectors"]
    assert (collector["reported"], collector["undelivered"]) == (True, 0), collector
    projected_to_end(release.namespace, "stores-kafka-0", GROUP, TOPIC)
    member = MemberKey(run_id, 1, "rank-0")
    web.wait_exact(member, "metrics", {("", "loss"): [(0, 1.7e9, 1.0)]}, seconds=0)
