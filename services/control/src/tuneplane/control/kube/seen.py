"""A launch's Job as control follows it: the Job and its pods, in the words of a Slurm job
(``JobSeen``), so ``job_follow.follow`` brings the attempt along the same way.

- ``COMPLETED``: the Job's Complete condition (every index's training container ended 0);
- ``PREEMPTED``: its Failed condition by its pod failure policy: a pod preempted or evicted
  (its ``DisruptionTarget`` condition: by the scheduler, the eviction API, the taint
  manager, the kubelet under node pressure), the reason in the pod's words;
- ``FAILED``: its Failed condition otherwise (a pod failed: the training container's exit code, or
  OOMKilled; the deadline), or a collector sidecar that refused to run (exit 2, its reason
  in its termination message): the kubelet would restart it for ever, and no training
  container starts before its sidecar is ready;
- ``RUNNING``: a pod is running, or its sidecar is (redeeming the ticket, before training);
- ``PENDING``: otherwise, with the reason a pod waits (Unschedulable, ErrImageNeverPull,
  ImagePullBackOff...), or ``JobSuspended`` before control resumes it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from tuneplane.control.kube.manifest import COLLECTOR, TRAINING
from tuneplane.controlplane.job_follow import PENDING, JobSeen

SUSPENDED = "JobSuspended"
#: The reason of a Job failed by a sidecar's refusal (its Job must then be deleted).
COLLECTOR_REFUSED = "CollectorRefused"
#: The condition a pod preempted or evicted carries, and the reason of a Job failed by the
#: pod failure policy's rule for it.
DISRUPTED = "DisruptionTarget"
BY_POLICY = "PodFailurePolicy"
#: Exit status of a collector that refused to run (``tuneplane-collector: refused: ...``).
REFUSED = 2


def statuses(pod: Mapping[str, Any]) -> Iterable[Mapping[str, Any]]:
    status = pod.get("status") or {}
    return [*(status.get("initContainerStatuses") or []),
            *(status.get("containerStatuses") or [])]


def refusal(pods: Iterable[Mapping[str, Any]]) -> str | None:
    """The first sidecar refusal among ``pods``, in its own words."""
    for pod in pods:
        for status in statuses(pod):
            if status.get("name") != COLLECTOR:
                continue
            for state in (status.get("state") or {}, status.get("lastState") or {}):
                ended = state.get("terminated") or {}
                if ended.get("exitCode") == REFUSED:
                    said = str(ended.get("message") or "").strip().splitlines()
                    reason = next((line for line in reversed(said) if "refused" in line),
                                  "the collector refused to run")
                    return f"{pod['metadata']['name']}: {reason}"
    return None


def failures(pods: Iterable[Mapping[str, Any]]) -> list[str]:
    """How each failed pod's training container ended (exit code, OOMKilled)."""
    words = []
    for pod in pods:
        for status in statuses(pod):
            ended = (status.get("state") or {}).get("terminated") or {}
            if status.get("name") == TRAINING and ended and ended.get("exitCode") != 0:
                words.append(f"{pod['metadata']['name']}: {ended.get('reason', 'Error')} "
                             f"(exit {ended.get('exitCode')})")
    return words


def waiting(pods: Iterable[Mapping[str, Any]]) -> str:
    """Why the pods wait: a container's waiting reason, else an unscheduled pod's."""
    for pod in pods:
        for status in statuses(pod):
            reason = ((status.get("state") or {}).get("waiting") or {}).get("reason")
            if reason and reason not in ("PodInitializing", "ContainerCreating"):
                return str(reason)
        for condition in (pod.get("status") or {}).get("conditions") or []:
            if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
                return str(condition.get("reason") or "Unschedulable")
    return ""


def disrupted(pods: Iterable[Mapping[str, Any]]) -> str | None:
    """How the first pod preempted or evicted was (its ``DisruptionTarget`` condition)."""
    for pod in pods:
        for condition in (pod.get("status") or {}).get("conditions") or []:
            if condition.get("type") == DISRUPTED and condition.get("status") == "True":
                said = condition.get("message") or ""
                return (f"{pod['metadata']['name']}: {condition.get('reason') or DISRUPTED}"
                        + (f": {said}" if said else ""))
    return None


def running(pod: Mapping[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Running", "Succeeded") or any(
        "running" in (status.get("state") or {}) for status in statuses(pod))


def job_seen(job: Mapping[str, Any], pods: Sequence[Mapping[str, Any]]) -> JobSeen:
    conditions = {c.get("type"): c for c in (job.get("status") or {}).get("conditions") or []
                  if c.get("status") == "True"}
    refused = refusal(pods)
    if refused is not None and "Complete" not in conditions:
        return JobSeen("FAILED", 0, COLLECTOR_REFUSED, f"{REFUSED}:0", refused)
    if "Complete" in conditions:
        return JobSeen("COMPLETED", 0)
    if "Failed" in conditions:
        failed = conditions["Failed"]
        said = str(failed.get("message") or "")
        if failed.get("reason") == BY_POLICY and DISRUPTED in said:
            how = disrupted(pods)  # the pod, when still there, says by what
            return JobSeen("PREEMPTED", 0, DISRUPTED,
                           comment=f"{said} ({how})" if how else said)
        return JobSeen("FAILED", 0, str(failed.get("reason") or ""),
                       comment="; ".join(s for s in (said, *failures(pods)) if s))
    if (job.get("spec") or {}).get("suspend"):
        return JobSeen(PENDING, 0, SUSPENDED)
    if any(running(pod) for pod in pods):
        return JobSeen("RUNNING", 0)
    return JobSeen(PENDING, 0, waiting(pods))
