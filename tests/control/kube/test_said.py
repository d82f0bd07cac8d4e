"""What Kubernetes said of a launch's Job, as the run page lists it: the events of the Job
and of its own pods, how containers ended when not with 0, oldest first and bounded."""

from __future__ import annotations

from typing import Any

from tuneplane.control.kube.said import MAX_MESSAGE, MAX_RECORDS, said

JOB = {"metadata": {"name": "tuneplane-launch-7", "uid": "u7"}}


def event(involved: dict[str, str], **fields: Any) -> dict[str, Any]:
    return {"metadata": {"creationTimestamp": "2026-01-01T00:00:00Z"},
            "involvedObject": involved, **fields}


def test_the_jobs_and_its_pods_events_with_when_each_was_last_seen() -> None:
    pod = {"kind": "Pod", "name": "tuneplane-launch-7-1-abcde"}
    records = said(JOB, [
        event(pod, type="Warning", reason="FailedScheduling", message=" 0/1 nodes ",
              eventTime="2026-01-01T00:00:05.000000Z",
              series={"count": 4, "lastObservedTime": "2026-01-01T00:00:09.000000Z"}),
        event({"kind": "Job", "name": "tuneplane-launch-7", "uid": "u7"},
              reason="SuccessfulCreate", message="Created pod", count=2,
              lastTimestamp="2026-01-01T00:00:02Z"),
        event({"kind": "Pod", "name": "tuneplane-launch-70-0-x"}, reason="Pulled"),
        event({"kind": "Job", "name": "tuneplane-launch-7", "uid": "other"}, reason="Made"),
    ], [])
    assert records == [
        {"at": "2026-01-01T00:00:02Z", "type": "Normal", "reason": "SuccessfulCreate",
         "object": "job/tuneplane-launch-7", "message": "Created pod", "count": 2},
        {"at": "2026-01-01T00:00:09.000000Z", "type": "Warning", "reason": "FailedScheduling",
         "object": "pod/tuneplane-launch-7-1-abcde", "message": "0/1 nodes", "count": 4}]


def test_containers_that_ended_otherwise_than_with_0_are_said_too() -> None:
    pod = {"metadata": {"name": "tuneplane-launch-7-0-x"}, "status": {
        "initContainerStatuses": [{"name": "tuneplane-collector", "state": {"terminated": {
            "exitCode": 0, "finishedAt": "2026-01-01T00:01:00Z"}}}],
        "containerStatuses": [{"name": "training", "state": {"running": {}}, "lastState": {
            "terminated": {"exitCode": 137, "reason": "OOMKilled",
                           "finishedAt": "2026-01-01T00:00:30Z", "message": "a\nlast words"}}}]}}
    (record,) = said(JOB, [], [pod])
    assert record == {"at": "2026-01-01T00:00:30Z", "type": "Warning", "reason": "OOMKilled",
                      "object": "pod/tuneplane-launch-7-0-x",
                      "message": "container training exited 137: last words", "count": 1}


def test_the_newest_are_kept_and_each_message_is_bounded() -> None:
    events = [event({"kind": "Job", "name": "tuneplane-launch-7", "uid": "u7"},
                    reason=f"R{i}", message="x" * 10_000,
                    lastTimestamp=f"2026-01-01T00:{i // 60:02d}:{i % 60:02d}Z")
              for i in range(MAX_RECORDS + 20)]
    records = said(JOB, events, [])
    assert len(records) == MAX_RECORDS
    assert (records[0]["reason"], records[-1]["reason"]) == ("R20", f"R{MAX_RECORDS + 19}")
    assert {len(r["message"]) for r in records} == {MAX_MESSAGE}
