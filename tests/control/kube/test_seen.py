"""A launch's Job and pods, in the words control follows launches by."""

from __future__ import annotations

from typing import Any

from tuneplane.control.kube.seen import job_seen


def pod(name: str, phase: str = "Pending", *, init: dict[str, Any] | None = None,
        main: dict[str, Any] | None = None, scheduled: bool = True) -> dict[str, Any]:
    status: dict[str, Any] = {"phase": phase, "conditions": [
        {"type": "PodScheduled", "status": "True" if scheduled else "False",
         "reason": "" if scheduled else "Unschedulable"}]}
    if init is not None:
        status["initContainerStatuses"] = [{"name": "tuneplane-collector", **init}]
    if main is not None:
        status["containerStatuses"] = [{"name": "training", **main}]
    return {"metadata": {"name": name}, "status": status}


def job(*conditions: tuple[str, str, str], suspend: bool = False) -> dict[str, Any]:
    return {"spec": {"suspend": suspend}, "status": {"conditions": [
        {"type": t, "status": "True", "reason": r, "message": m} for t, r, m in conditions]}}


def test_a_suspended_job_is_pending_until_control_resumes_it() -> None:
    assert job_seen(job(suspend=True), []).reason == "JobSuspended"


def test_a_pod_whose_sidecar_runs_makes_the_job_running_before_training_starts() -> None:
    redeeming = pod("p-0", init={"state": {"running": {}}},
                    main={"state": {"waiting": {"reason": "PodInitializing"}}})
    seen = job_seen(job(), [redeeming])
    assert (seen.state, seen.running) == ("RUNNING", True)


def test_pods_that_wait_say_why() -> None:
    assert job_seen(job(), [pod("p-0", scheduled=False)]).reason == "Unschedulable"
    pulling = pod("p-0", init={"state": {"waiting": {"reason": "ErrImageNeverPull"}}})
    seen = job_seen(job(), [pulling])
    assert (seen.state, seen.reason) == ("PENDING", "ErrImageNeverPull")


def test_complete_and_failed_follow_the_jobs_conditions_with_how_pods_failed() -> None:
    assert job_seen(job(("Complete", "", "")), []).state == "COMPLETED"
    killed = pod("p-1", "Failed", main={"state": {"terminated": {"exitCode": 137,
                                                                  "reason": "OOMKilled"}}})
    seen = job_seen(job(("Failed", "BackoffLimitExceeded", "Job has reached the specified "
                                                           "backoff limit")), [killed])
    assert (seen.state, seen.reason) == ("FAILED", "BackoffLimitExceeded")
    assert "p-1: OOMKilled (exit 137)" in seen.comment


def test_a_refusing_sidecar_fails_the_job_with_its_own_words() -> None:
    said = ("INFO starting\ntuneplane-collector: refused: p-0: spool root refused: "
            "/var/spool/tuneplane/spools is on NFS")
    refused = pod("p-0", init={"state": {"waiting": {"reason": "CrashLoopBackOff"}},
                               "lastState": {"terminated": {"exitCode": 2, "message": said}}})
    seen = job_seen(job(), [refused])
    assert (seen.state, seen.reason, seen.exit_code) == ("FAILED", "CollectorRefused", "2:0")
    assert seen.comment.startswith("p-0: tuneplane-collector: refused: p-0: spool root")
    assert "is on NFS" in seen.comment


def test_a_sidecar_ended_by_its_drain_is_no_refusal() -> None:
    drained = pod("p-0", "Succeeded", init={"state": {"terminated": {"exitCode": 0}}},
                  main={"state": {"terminated": {"exitCode": 0}}})
    assert job_seen(job(("Complete", "", "")), [drained]).state == "COMPLETED"
    assert job_seen(job(), [drained]).state == "RUNNING"  # before the Job says Complete


def test_a_job_failed_by_its_policy_for_an_evicted_pod_is_preempted_saying_how() -> None:
    evicted = pod("p-0", "Failed", main={"state": {"terminated": {"exitCode": 143}}})
    evicted["status"]["conditions"].append({
        "type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI",
        "message": "Eviction API: evicting"})
    seen = job_seen(job(("Failed", "PodFailurePolicy", "Pod ns/p-0 has condition "
                         "DisruptionTarget matching FailJob rule at index 0")), [evicted])
    assert (seen.state, seen.reason, seen.comment) == (
        "PREEMPTED", "DisruptionTarget", "Pod ns/p-0 has condition DisruptionTarget matching "
        "FailJob rule at index 0 (p-0: EvictionByEvictionAPI: Eviction API: evicting)")
    # Failed by the same policy for another reason, or by its backoff limit: failed.
    for reason, message in (("PodFailurePolicy", "Container training exited with 3"),
                            ("BackoffLimitExceeded", "backoff limit")):
        assert job_seen(job(("Failed", reason, message)), [evicted]).state == "FAILED"
