"""The objects of a Kubernetes launch: what runs where, with which credentials in reach."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from tuneplane.control.kube import manifest
from tuneplane.control.kube.placement import Spools

REACH = manifest.PodReach(control="tuneplane-control.tp.svc:8443", server_name="gateway.test",
                          control_ca_pem="CA", image="tuneplane-collector:" + "a" * 64,
                          digest="a" * 64, pull_policy="Never", spools=Spools(["emptyDir"]),
                          drain_seconds=30, collector_environment={})
ROW = {"launch_id": 7, "run_id": "r-1", "attempt": 2, "nodes": 3, "project": "vision",
       "member_template": "rank-{rank}", "command": json.dumps(["python", "-c", "$(HOME) $$"]),
       "environment": json.dumps({"LR": "0.1$(X)"}),
       "options": json.dumps({"image": "trainer:1", "requests": {"cpu": "1"},
                              "limits": {"memory": "1Gi"}})}


def containers(job: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    pod = job["spec"]["template"]["spec"]
    return pod, pod["initContainers"][0], pod["containers"][0]


def test_an_indexed_job_of_one_pod_per_member_made_suspended_in_the_given_namespace() -> None:
    job = manifest.job(ROW, "team-vision", REACH)
    spec = job["spec"]
    assert job["metadata"]["namespace"] == "team-vision"
    assert (spec["completionMode"], spec["completions"], spec["parallelism"]) == \
        ("Indexed", 3, 3)
    assert spec["suspend"] is True
    assert spec["backoffLimit"] == 0
    volumes = {v["name"]: v for v in spec["template"]["spec"]["volumes"]}
    assert volumes["work"] == {"name": "work", "emptyDir": {}}  # no limit unless given
    limited = manifest.job(ROW, "team-vision", dataclasses.replace(REACH, workdir_limit="20Gi"))
    assert limited["spec"]["template"]["spec"]["volumes"][0] == {
        "name": "work", "emptyDir": {"sizeLimit": "20Gi"}}
    # A pod preempted or evicted fails the Job at once (queued again as the next attempt).
    assert spec["podFailurePolicy"] == {"rules": [{"action": "FailJob", "onPodConditions": [
        {"type": "DisruptionTarget", "status": "True"}]}]}


def test_the_sidecar_alone_holds_the_ticket_and_the_spool() -> None:
    pod, sidecar, training = containers(manifest.job(ROW, "ns", REACH))
    assert pod["automountServiceAccountToken"] is False
    assert sidecar["restartPolicy"] == "Always"  # a native sidecar
    assert {m["name"] for m in sidecar["volumeMounts"]} == {"work", "spool", "ticket", "ready"}
    assert [m["name"] for m in training["volumeMounts"]] == ["work"]
    assert next(m for m in sidecar["volumeMounts"] if m["name"] == "work")["readOnly"]
    for container in (sidecar, training):
        context = container["securityContext"]
        assert context["runAsNonRoot"]
        assert not context["allowPrivilegeEscalation"]
        assert context["capabilities"] == {"drop": ["ALL"]}
    assert sidecar["securityContext"]["readOnlyRootFilesystem"]
    assert sidecar["startupProbe"]["exec"]["command"][:2] == ["/tuneplane-collector", "ready"]
    assert pod["terminationGracePeriodSeconds"] >= REACH.drain_seconds


def test_the_sidecar_names_its_job_and_index_from_the_pod() -> None:
    _, sidecar, _ = containers(manifest.job(ROW, "ns", REACH))
    args = sidecar["args"]
    assert args[:5] == ["kube-pod", "--control", REACH.control, "--server-name",
                        "gateway.test"]
    assert args[args.index("--launch") + 1] == "7"
    fields = {e["name"]: e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath")
              for e in sidecar["env"]}
    assert fields["TUNEPLANE_KUBERNETES_JOB_UID"] == \
        "metadata.labels['batch.kubernetes.io/controller-uid']"
    assert "job-completion-index" in fields["JOB_COMPLETION_INDEX"]
    values = {e["name"]: e.get("value") for e in sidecar["env"]}
    assert values["TUNEPLANE_COLLECTOR_ARTIFACT_DIGEST"] == "a" * 64  # the image is checked


def test_the_training_container_gets_its_identity_and_the_users_values_as_given() -> None:
    _, _, training = containers(manifest.job(ROW, "ns", REACH))
    env = {e["name"]: e.get("value") for e in training["env"]}
    assert env["TUNEPLANE_RUN_ID"] == "r-1"
    assert env["TUNEPLANE_ATTEMPT"] == "2"
    assert env["TUNEPLANE_MEMBER"] == "rank-$(JOB_COMPLETION_INDEX)"  # Kubernetes expands it
    assert env["LR"] == "0.1$$(X)"  # the user's: never expanded
    assert training["command"] == ["python", "-c", "$$(HOME) $$$$"]  # Kubernetes halves $$
    assert training["image"] == "trainer:1"
    assert training["resources"] == {"requests": {"cpu": "1"}, "limits": {"memory": "1Gi"}}


def test_the_ticket_secret_is_owned_by_the_job() -> None:
    job = {"metadata": {"name": "tuneplane-launch-7", "uid": "u-1"}}
    secret = manifest.secret(7, "ns", "TICKET", "CA", job)
    assert secret["stringData"] == {"ticket": "TICKET", "control-ca.pem": "CA"}
    assert secret["metadata"]["ownerReferences"][0]["uid"] == "u-1"
