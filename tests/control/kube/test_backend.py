"""Control's Kubernetes backend (real PostgreSQL) against an API server that holds what the
test puts in it: the Job made suspended, its Secret, resumed once its uid is stored; a
Secret already there beside a new Job; a namespace that cannot be listed; a sidecar that
refuses; redemption asking for the one Job; what Kubernetes said of it stored; a Job whose pod
was evicted followed by a new one, the next attempt."""

from __future__ import annotations

import datetime as dt
import json
import uuid
from collections.abc import AsyncIterator
from typing import Any
from unittest.mock import ANY

import asyncpg
import httpx
import kr8s
import pytest

from tuneplane.control.kube.backend import KubernetesBackend
from tuneplane.control.kube.manifest import PodReach
from tuneplane.control.kube.placement import Namespaces, Spools
from tuneplane.controlplane import job_follow, kube_launches, runs
from tuneplane.controlplane.job_follow import JobSeen

ARTIFACT = {"version": 1, "sources": [
    {"id": "a", "kind": "jsonl", "path": "a.jsonl", "owner": "rank-0"}]}
REACH = PodReach(control="control:8443", server_name="", control_ca_pem="CA",
                 image="tuneplane-collector:x", digest="x", pull_policy="Never",
                 spools=Spools(["emptyDir"]), drain_seconds=30,
                 collector_environment={})


def refused(status: int) -> kr8s.ServerError:
    return kr8s.ServerError("refused", response=httpx.Response(status))


class FakeApi:
    """Objects by (namespace, plural, name); what was asked, in order."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.asked: list[tuple[str, str, str | None]] = []
        self.down: set[str] = set()

    async def call(self, method: str, version: str, url: str, *, namespace: str | None = None,
                   body: Any = None, content_type: str = "", params: Any = None) -> Any:
        self.asked.append((method, url, namespace))
        assert namespace is not None
        if namespace in self.down:
            raise refused(403)
        plural, _, name = url.partition("/")
        key = (namespace, plural, name)
        if method == "POST":
            name = body["metadata"]["name"]
            if (namespace, plural, name) in self.objects:
                raise refused(409)
            made = {**body, "metadata": {**body["metadata"], "uid": f"uid-{uuid.uuid4()}"}}
            self.objects[(namespace, plural, name)] = made
            return made
        if method == "GET" and not name:
            wanted = (params or {}).get("labelSelector", "")
            return {"items": [o for (n, p, _), o in self.objects.items()
                              if n == namespace and p == plural and matches(o, wanted)]}
        if key not in self.objects:
            raise refused(404)
        if method == "DELETE":
            return self.objects.pop(key)
        if method == "PATCH":
            self.objects[key]["spec"].update(body["spec"])
        return self.objects[key]


def matches(obj: dict[str, Any], selector: str) -> bool:
    labels = obj["metadata"].get("labels", {})
    return all(labels.get(k) == v
               for k, v in (p.split("=", 1) for p in selector.split(",") if p))


@pytest.fixture
async def pool(initialised: Any) -> AsyncIterator[asyncpg.Pool]:
    created = await asyncpg.create_pool(initialised.database_url, min_size=1, max_size=2)
    yield created
    await created.close()


class Tickets:
    def issue_ticket(self, launch_id: int, ttl_seconds: int) -> str:
        return f"ticket-{launch_id}"


def backend_of(pool: asyncpg.Pool, api: FakeApi) -> KubernetesBackend:
    made = KubernetesBackend(pool, api, Namespaces(["jobs"]), REACH)  # type: ignore[arg-type]
    made.serve(Tickets())
    return made


async def queued(db: asyncpg.Connection, run_id: str) -> int:
    await runs.create_run(db, ARTIFACT, created_by="test", now=dt.datetime.now(dt.UTC),
                          run_id=run_id)
    return (await kube_launches.create(db, run_id, indexes=1,
                                       pod=kube_launches.PodSpec("trainer:1"),
                                       command=["train"], environment={})).launch_id


async def state(db: asyncpg.Connection, launch_id: int) -> tuple[str, str | None, str, str]:
    row = await db.fetchrow("SELECT l.state, l.job_id, l.detail, a.state AS attempt FROM "
                            "slurm_launches l JOIN attempts a ON a.run_id = l.run_id AND "
                            "a.attempt = l.attempt WHERE l.launch_id = $1", launch_id)
    assert row is not None
    return row["state"], row["job_id"], row["detail"], row["attempt"]


async def submitted(pool: asyncpg.Pool, db: asyncpg.Connection, run_id: str
                    ) -> tuple[FakeApi, KubernetesBackend, int, dict[str, Any]]:
    """A launch the backend has submitted: the API, the backend, the launch and its Job."""
    api = FakeApi()
    backend = backend_of(pool, api)
    launch_id = await queued(db, run_id)
    await backend.step()
    return api, backend, launch_id, api.objects[("jobs", "jobs", f"tuneplane-launch-{launch_id}")]


def pod(job: dict[str, Any], sidecar: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": f"{job['metadata']['name']}-0-x", "uid": "pod-uid-0", "labels": {
        **job["metadata"]["labels"], "batch.kubernetes.io/controller-uid": job["metadata"]["uid"]}},
        "status": {"phase": "Pending", "initContainerStatuses": [
            {"name": "tuneplane-collector", **sidecar}]}}


async def test_the_job_is_made_suspended_with_its_ticket_then_resumed_and_followed(
        pool: asyncpg.Pool, db: asyncpg.Connection, run_id: str) -> None:
    api, backend, launch_id, job = await submitted(pool, db, run_id)
    secret = api.objects[("jobs", "secrets", job["metadata"]["name"])]
    assert secret["stringData"]["ticket"] == f"ticket-{launch_id}"
    assert secret["metadata"]["ownerReferences"][0]["uid"] == job["metadata"]["uid"]
    assert job["spec"]["suspend"] is False  # resumed once its uid was stored
    assert await state(db, launch_id) == ("submitted", job["metadata"]["uid"], "", "pending")
    api.objects[("jobs", "pods", "p")] = pod(job, {"state": {"running": {}}})
    await backend.step()
    assert (await state(db, launch_id))[3] == "running"
    assert (await backend.job(job["metadata"]["uid"])) is not None
    job["status"] = {"conditions": [{"type": "Complete", "status": "True"}]}
    await backend.step()
    assert (await state(db, launch_id))[::3] == ("ended", "finished")


async def test_a_secret_someone_made_under_the_jobs_name_fails_the_launch_and_its_job_goes(
        pool: asyncpg.Pool, db: asyncpg.Connection, run_id: str) -> None:
    api = FakeApi()
    launch_id = await queued(db, run_id)
    name = f"tuneplane-launch-{launch_id}"
    api.objects[("jobs", "secrets", name)] = {"metadata": {"name": name},
                                             "stringData": {"control-ca.pem": "THEIRS"}}
    await backend_of(pool, api).step()
    launch, _, detail, attempt = await state(db, launch_id)
    assert (launch, attempt) == ("ended", "failed")
    assert "not made" in detail
    assert ("jobs", "jobs", name) not in api.objects  # deleted, not left suspended


async def test_a_namespace_not_listed_leaves_its_launches_followed_later_not_vanished(
        pool: asyncpg.Pool, db: asyncpg.Connection, run_id: str) -> None:
    api, backend, launch_id, job = await submitted(pool, db, run_id)
    api.down.add("jobs")
    await backend.step()
    assert (await state(db, launch_id))[::3] == ("submitted", "pending")
    api.down.clear()
    await backend.step()
    assert (await state(db, launch_id))[::3] == ("submitted", "pending")
    del api.objects[("jobs", "jobs", job["metadata"]["name"])]
    await backend.step()  # listed, and gone: vanished
    assert (await state(db, launch_id))[::3] == ("ended", "failed")


async def test_a_refusing_sidecar_fails_the_attempt_in_its_words_and_the_job_is_deleted(
        pool: asyncpg.Pool, db: asyncpg.Connection, run_id: str) -> None:
    api, backend, launch_id, job = await submitted(pool, db, run_id)
    said = "tuneplane-collector: refused: p: spool root refused: /var/spool is on NFS"
    api.objects[("jobs", "pods", "p")] = pod(job, {
        "state": {"waiting": {"reason": "CrashLoopBackOff"}},
        "lastState": {"terminated": {"exitCode": 2, "message": said}}})
    await backend.step()
    launch, _, detail, attempt = await state(db, launch_id)
    assert (launch, attempt) == ("ended", "failed")
    assert "is on NFS" in detail
    assert ("jobs", "jobs", job["metadata"]["name"]) not in api.objects


def event(name: str, kind: str, involved: str, uid: str, reason: str, at: str,
          kind_of: str = "Normal") -> dict[str, Any]:
    return {"metadata": {"name": name, "creationTimestamp": at}, "type": kind_of,
            "reason": reason, "count": 1, "message": f"{reason} of {involved}",
            "lastTimestamp": at, "involvedObject": {"kind": kind, "name": involved, "uid": uid}}


async def test_what_kubernetes_said_of_the_job_and_its_pods_is_stored_with_the_launch(
        pool: asyncpg.Pool, db: asyncpg.Connection, run_id: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    api, backend, launch_id, job = await submitted(pool, db, run_id)
    name, uid = job["metadata"]["name"], job["metadata"]["uid"]
    api.objects[("jobs", "pods", "p")] = pod(job, {"state": {"running": {}}})
    for made in (
            event("e1", "Job", name, uid, "SuccessfulCreate", "2026-01-01T00:00:01Z"),
            event("e2", "Pod", f"{name}-0-x", "pod-uid-0", "FailedScheduling",
                  "2026-01-01T00:00:02Z", "Warning"),
            # A pod named as the Job's would be, not the Job's: its events are not.
            event("e3", "Pod", f"{name}-0-y", "forged", "Pulled", "2026-01-01T00:00:03Z"),
            event("e4", "Job", name, "another-uid", "Completed", "2026-01-01T00:00:04Z")):
        api.objects[("jobs", "events", made["metadata"]["name"])] = made
    backend._told._events.clear()  # read again now, not in EVENTS_SECONDS
    await backend.step()
    stored = json.loads(await db.fetchval("SELECT events FROM slurm_launches WHERE "
                                          "launch_id = $1", launch_id))
    assert [(e["object"], e["reason"], e["type"]) for e in stored] == [
        (f"job/{name}", "SuccessfulCreate", "Normal"),
        (f"pod/{name}-0-x", "FailedScheduling", "Warning")]
    # The pod goes (evicted); its events are still the Job's, read once more as it ends.
    del api.objects[("jobs", "pods", "p")]
    api.objects[("jobs", "events", "e5")] = event(
        "e5", "Pod", f"{name}-0-x", "pod-uid-0", "Killing", "2026-01-01T00:00:08Z")
    job["status"] = {"conditions": [{"type": "Failed", "status": "True",
                                     "reason": "BackoffLimitExceeded", "message": "limit"}]}
    # Stored before the follow that ends the attempt: an ended attempt never shows without.
    before_end: list[list[str]] = []
    really = job_follow.follow

    async def follow(conn: asyncpg.Connection, launch: int, seen: JobSeen) -> str:
        said = json.loads(await conn.fetchval("SELECT events FROM slurm_launches WHERE "
                                              "launch_id = $1", launch))
        before_end.append([e["reason"] for e in said])
        return await really(conn, launch, seen)
    monkeypatch.setattr(job_follow, "follow", follow)
    await backend.step()
    stored = json.loads(await db.fetchval("SELECT events FROM slurm_launches WHERE "
                                          "launch_id = $1", launch_id))
    assert [e["reason"] for e in stored] == ["SuccessfulCreate", "FailedScheduling", "Killing"]
    assert before_end == [["SuccessfulCreate", "FailedScheduling", "Killing"]]
    assert await state(db, launch_id) == ("ended", uid, ANY, "failed")
    assert backend._told.records == {}  # nothing kept of an ended launch


async def test_an_ended_containers_oomkilled_is_stored_as_its_launch_ends(
        pool: asyncpg.Pool, db: asyncpg.Connection, run_id: str) -> None:
    api, backend, launch_id, job = await submitted(pool, db, run_id)
    api.objects[("jobs", "pods", "p")] = pod(job, {"state": {"running": {}}})
    api.objects[("jobs", "pods", "p")]["status"]["containerStatuses"] = [
        {"name": "training", "state": {"terminated": {
            "exitCode": 137, "reason": "OOMKilled", "finishedAt": "2026-01-01T00:00:09Z"}}}]
    job["status"] = {"conditions": [{"type": "Failed", "status": "True",
                                     "reason": "BackoffLimitExceeded", "message": "limit"}]}
    await backend.step()
    stored = json.loads(await db.fetchval("SELECT events FROM slurm_launches WHERE "
                                          "launch_id = $1", launch_id))
    assert [(e["reason"], e["message"]) for e in stored] == [
        ("OOMKilled", "container training exited 137")]


async def test_a_job_whose_pod_was_evicted_is_followed_by_a_new_job_the_next_attempt(
        pool: asyncpg.Pool, db: asyncpg.Connection, run_id: str) -> None:
    api, backend, launch_id, job = await submitted(pool, db, run_id)
    api.objects[("jobs", "pods", "p")] = pod(job, {"state": {"running": {}}})
    await backend.step()
    job["status"] = {"conditions": [{
        "type": "Failed", "status": "True", "reason": "PodFailurePolicy",
        "message": "Pod jobs/p has condition DisruptionTarget matching FailJob rule"}]}
    await backend.step()  # the launch ends, queued again
    launch, _, detail, attempt = await state(db, launch_id)
    assert (launch, attempt) == ("ended", "preempted")
    again = int(detail.rsplit("queued again as launch ", 1)[1].split(",")[0])
    await backend.step()  # the new launch submitted: a Job of its own
    made = api.objects[("jobs", "jobs", f"tuneplane-launch-{again}")]
    assert made["metadata"]["annotations"]["tuneplane.dev/attempt"] == "2"
    assert (await state(db, again))[::3] == ("submitted", "pending")
