"""What Kubernetes said of a launch's Job, as the run page lists it: the events of the Job
and of its own pods (by uid), how containers ended when not with 0, the newest by when the
API server made them, each field bounded."""

from __future__ import annotations

from typing import Any

from tuneplane.control.kube.said import MAX_MESSAGE, MAX_RECORDS, by_uid, said

JOB = {"metadata": {"name": "tuneplane-launch-7", "uid": "u7"}}
POD = {"kind": "Pod", "name": "tuneplane-launch-7-1-abcde", "uid": "p1"}


def event(involved: dict[str, str], made: str = "2026-01-01T00:00:00Z",
          **fields: Any) -> dict[str, Any]:
    return {"metadata": {"creationTimestamp": made}, "involvedObject": involved, **fields}


def test_the_jobs_and_its_pods_events_by_uid_with_when_each_was_last_seen() -> None:
    events = by_uid([
        event(POD, "2026-01-01T00:00:05Z", type="Warning", reason="FailedScheduling",
              message=" 0/1 nodes ", eventTime="2026-01-01T00:00:05.000000Z",
              series={"count": 4, "lastObservedTime": "2026-01-01T00:00:09.000000Z"}),
        event({"kind": "Job", "name": "tuneplane-launch-7", "uid": "u7"},
              "2026-01-01T00:00:01Z", reason="SuccessfulCreate", message="Created pod",
              count=2, lastTimestamp="2026-01-01T00:00:02Z"),
        # Named as a pod of the Job, but another object: not the Job's.
        event({"kind": "Pod", "name": "tuneplane-launch-7-0-x", "uid": "forged"},
              reason="Pulled"),
        # The Job's uid given a pod's kind: not the Job's either.
        event({"kind": "Pod", "name": "x", "uid": "u7"}, reason="Odd"),
        event({"kind": "Job", "name": "tuneplane-launch-7", "uid": "other"}, reason="Made"),
    ])
    assert said(JOB, events, {"p1"}, []) == [
        {"at": "2026-01-01T00:00:02Z", "type": "Normal", "reason": "SuccessfulCreate",
         "object": "job/tuneplane-launch-7", "message": "Created pod", "count": 2,
         "made": "2026-01-01T00:00:01Z"},
        {"at": "2026-01-01T00:00:09.000000Z", "type": "Warning", "reason": "FailedScheduling",
         "object": "pod/tuneplane-launch-7-1-abcde", "message": "0/1 nodes", "count": 4,
         "made": "2026-01-01T00:00:05Z"}]


def test_containers_that_ended_otherwise_than_with_0_are_said_too() -> None:
    pod = {"metadata": {"name": "tuneplane-launch-7-0-x"}, "status": {
        "initContainerStatuses": [{"name": "tuneplane-collector", "state": {"terminated": {
            "exitCode": 0, "finishedAt": "2026-01-01T00:01:00Z"}}}],
        "containerStatuses": [{"name": "training", "state": {"running": {}}, "lastState": {
            "terminated": {"exitCode": 137, "reason": "OOMKilled",
                           "finishedAt": "2026-01-01T00:00:30Z", "message": "a\nlast words"}}}]}}
    (record,) = said(JOB, {}, set(), [pod])
    assert record == {"at": "2026-01-01T00:00:30Z", "type": "Warning", "reason": "OOMKilled",
                      "object": "pod/tuneplane-launch-7-0-x",
                      "message": "container training exited 137: last words", "count": 1,
                      "made": "2026-01-01T00:00:30Z"}


def test_the_newest_made_are_kept_whatever_times_an_event_claims_and_fields_are_bounded(
) -> None:
    job = {"kind": "Job", "name": "tuneplane-launch-7", "uid": "u7"}
    events = [event(job, f"2026-01-01T00:{i // 60:02d}:{i % 60:02d}Z", reason=f"R{i}",
                    message="x" * 10_000, type="Warning" if i % 2 else "t" * 100_000)
              for i in range(MAX_RECORDS + 20)]
    # Made first, claiming to be the newest: not kept over those made since.
    events.append(event(job, "2025-01-01T00:00:00Z", reason="Forged",
                        lastTimestamp="2099-01-01T00:00:00Z"))
    records = said(JOB, by_uid(events), set(), [])
    assert len(records) == MAX_RECORDS
    assert (records[0]["reason"], records[-1]["reason"]) == ("R20", f"R{MAX_RECORDS + 19}")
    assert {len(r["message"]) for r in records} == {MAX_MESSAGE}
    assert {r["type"] for r in records} == {"Normal", "Warning"}
