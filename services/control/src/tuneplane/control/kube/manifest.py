"""A Kubernetes launch as the objects control makes for it: an Indexed Job, and the Secret
that holds its ticket. Pure: a launch's row and the operator's choices in, manifests out.

Each pod runs two containers:

- the collector, a native sidecar (an init container with ``restartPolicy: Always``) from
  the collector image, as an unprivileged user with a read-only root, no capabilities and
  no service account token. The ticket Secret and the spool are mounted in it alone; its
  startup probe (``tuneplane-collector ready``) passes once the ticket is redeemed, and the
  kubelet starts the training container only then. Its grace period covers the drain.
- the training container: the user's image, command, environment and resources, non-root,
  without privilege escalation, capabilities or the API's credentials, sharing only the
  working directory (an ``emptyDir`` at ``/work``) with the collector, which reads the
  artifact's sources there.

The Job is made suspended: control stores its uid (the job id its sidecars name) before any
pod can run, then resumes it. Kubernetes expands ``$(NAME)`` in commands and environment
values; the user's are escaped, so they reach the container as given.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tuneplane.control.kube.placement import SPOOL_MOUNT, SpoolGrant, Spools

MANAGED_BY = "tuneplane-control"
LAUNCH_LABEL = "tuneplane.dev/launch"
RUN_ANNOTATION = "tuneplane.dev/run"
COLLECTOR = "tuneplane-collector"
TRAINING = "training"
WORKDIR = "/work"
TICKET_DIR = "/run/tuneplane/ticket"
READY_FILE = "/run/tuneplane/ready/ready"
COLLECTOR_UID = 65532
#: How long a Job that ended by itself is kept (its pods' logs readable), in seconds.
FINISHED_KEPT = 86400
#: The drain's time, and this much more to report how it ended.
REPORT_SECONDS = 30
INDEX = {"name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef": {
    "fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}}
#: A pod preempted or evicted fails its Job at once: the launch is queued again as the next
#: attempt (a new Job), not started again as the same.
PREEMPTED = {"rules": [{"action": "FailJob", "onPodConditions": [
    {"type": "DisruptionTarget", "status": "True"}]}]}
LOCKED_DOWN = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]},
               "runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}


@dataclass(frozen=True, slots=True)
class PodReach:
    """How every launch's sidecar reaches control and runs: the operator's choices."""

    control: str          # host:port the pods reach control at
    server_name: str      # control's TLS name, when not the host
    control_ca_pem: str
    image: str            # the collector image, made from the collector artifact
    digest: str           # that artifact's digest: the sidecar checks the image holds it
    pull_policy: str
    spools: Spools        # the spool grant of each project
    drain_seconds: int
    collector_environment: Mapping[str, str]
    #: The working directory's sizeLimit (the kubelet evicts a pod past it); "": none.
    workdir_limit: str = ""
    training_uid: int = 1000


def job_name(launch_id: int) -> str:
    return f"tuneplane-launch-{launch_id}"


def literal(text: str) -> str:
    """``text`` as Kubernetes passes it on: it turns ``$(NAME)`` into a variable's value and
    ``$$`` into ``$``, so every ``$`` is doubled."""
    return text.replace("$", "$$")


def labels(launch_id: int) -> dict[str, str]:
    return {"app.kubernetes.io/managed-by": MANAGED_BY, LAUNCH_LABEL: str(launch_id)}


def secret(launch_id: int, namespace: str, ticket: str, control_ca_pem: str,
           owner: Mapping[str, Any]) -> dict[str, Any]:
    """The ticket and control's CA, owned by the Job (deleted with it)."""
    return {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {"name": job_name(launch_id), "namespace": namespace,
                         "labels": labels(launch_id), "ownerReferences": [{
                             "apiVersion": "batch/v1", "kind": "Job",
                             "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"],
                             "controller": False, "blockOwnerDeletion": False}]},
            "stringData": {"ticket": ticket, "control-ca.pem": control_ca_pem}}


def sidecar(launch_id: int, reach: PodReach, spool: SpoolGrant) -> dict[str, Any]:
    args = ["kube-pod", "--control", reach.control, "--launch", str(launch_id),
            "--spool-root", spool.root, "--workdir", WORKDIR, "--workdir-given",
            "--ticket-file", f"{TICKET_DIR}/ticket",
            "--control-ca-file", f"{TICKET_DIR}/control-ca.pem", "--ready-file", READY_FILE]
    if reach.server_name:
        args[3:3] = ["--server-name", reach.server_name]
    environment = [
        {"name": "TUNEPLANE_KUBERNETES_JOB_UID", "valueFrom": {"fieldRef": {
            "fieldPath": "metadata.labels['batch.kubernetes.io/controller-uid']"}}},
        {"name": "TUNEPLANE_KUBERNETES_POD",
         "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        INDEX,
        {"name": "TUNEPLANE_TELEMETRY_DRAIN_SECONDS", "value": str(reach.drain_seconds)},
        {"name": "TUNEPLANE_COLLECTOR_ARTIFACT_DIGEST", "value": reach.digest},
        *({"name": k, "value": literal(v)} for k, v in sorted(reach.collector_environment.items())
          if k not in ("TUNEPLANE_TELEMETRY_DRAIN_SECONDS", "TUNEPLANE_COLLECTOR_ARTIFACT_DIGEST"))]
    return {"name": COLLECTOR, "image": reach.image, "imagePullPolicy": reach.pull_policy,
            "restartPolicy": "Always", "args": args, "env": environment,
            "securityContext": {**LOCKED_DOWN, "runAsUser": COLLECTOR_UID,
                                "runAsGroup": COLLECTOR_UID, "readOnlyRootFilesystem": True},
            "startupProbe": {"exec": {"command": ["/tuneplane-collector", "ready", READY_FILE]},
                             "periodSeconds": 1, "failureThreshold": 600},
            "terminationMessagePolicy": "FallbackToLogsOnError",
            "resources": {"requests": {"cpu": "50m", "memory": "32Mi"},
                          "limits": {"memory": "256Mi"}},
            "volumeMounts": [{"name": "work", "mountPath": WORKDIR, "readOnly": True},
                             {"name": "spool", "mountPath": SPOOL_MOUNT},
                             {"name": "ticket", "mountPath": TICKET_DIR, "readOnly": True},
                             {"name": "ready", "mountPath": READY_FILE.rsplit("/", 1)[0]}]}


def training(row: Mapping[str, Any], reach: PodReach) -> dict[str, Any]:
    options = json.loads(row["options"])
    member = row["member_template"].replace("{rank}", "$(JOB_COMPLETION_INDEX)")
    environment = [
        INDEX,
        {"name": "TUNEPLANE_RUN_ID", "value": literal(row["run_id"])},
        {"name": "TUNEPLANE_ATTEMPT", "value": str(row["attempt"])},
        {"name": "TUNEPLANE_PROJECT", "value": literal(row["project"])},
        {"name": "TUNEPLANE_MEMBER", "value": member},
        *({"name": k, "value": literal(v)}
          for k, v in sorted(json.loads(row["environment"]).items()))]
    resources = {k: dict(v) for k in ("requests", "limits") if (v := options.get(k))}
    return {"name": TRAINING, "image": options["image"],
            "command": [literal(arg) for arg in json.loads(row["command"])],
            "workingDir": WORKDIR, "env": environment, "resources": resources,
            "securityContext": {**LOCKED_DOWN, "runAsUser": reach.training_uid},
            "volumeMounts": [{"name": "work", "mountPath": WORKDIR}]}


def job(row: Mapping[str, Any], namespace: str, reach: PodReach) -> dict[str, Any]:
    """The launch's Indexed Job, suspended (resumed once its uid is stored)."""
    launch_id, indexes = int(row["launch_id"]), int(row["nodes"])
    spool = reach.spools.of(row["project"])
    pod = {"restartPolicy": "Never", "automountServiceAccountToken": False,
           "enableServiceLinks": False,
           "terminationGracePeriodSeconds": reach.drain_seconds + REPORT_SECONDS,
           "securityContext": {"fsGroup": COLLECTOR_UID,
                               "fsGroupChangePolicy": "OnRootMismatch"},
           "initContainers": [sidecar(launch_id, reach, spool)],
           "containers": [training(row, reach)],
           "volumes": [{"name": "work", "emptyDir": (
                          {"sizeLimit": reach.workdir_limit} if reach.workdir_limit else {})},
                       spool.volume(),
                       {"name": "ticket", "secret": {"secretName": job_name(launch_id),
                                                     "defaultMode": 0o440}},
                       {"name": "ready", "emptyDir": {"medium": "Memory", "sizeLimit": "1Mi"}}]}
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": job_name(launch_id), "namespace": namespace,
                         "labels": labels(launch_id),
                         "annotations": {RUN_ANNOTATION: row["run_id"],
                                         "tuneplane.dev/attempt": str(row["attempt"]),
                                         "tuneplane.dev/project": row["project"]}},
            "spec": {"completionMode": "Indexed", "completions": indexes,
                     "parallelism": indexes, "backoffLimit": 0, "suspend": True,
                     "ttlSecondsAfterFinished": FINISHED_KEPT,
                     "podReplacementPolicy": "Failed", "podFailurePolicy": PREEMPTED,
                     "template": {"metadata": {"labels": labels(launch_id)}, "spec": pod}}}
