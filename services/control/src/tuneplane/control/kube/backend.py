"""Control's Kubernetes backend: submits queued Kubernetes launches as Indexed Jobs in their
project's namespace and follows them (``jobs.JobBackend``), and answers redemption's
question about a Job (``SlurmJobControl``'s scheduler ``kubernetes``).

A launch is submitted as its Job, suspended, then the Secret with the ticket (owned by the
Job, so deleted with it); once the Job's uid is stored as the launch's job id, the Job is
resumed. A launch left ``submitting`` by a control that stopped finds its Job again by name,
label and launch annotation in the project's namespace. A Job whose launch ended while it
still runs pods (an editor's end; a refused sidecar) is deleted, its pods' sidecars
draining within their grace period; a Job that ended by itself is left for its
``ttlSecondsAfterFinished`` (its pods' logs stay readable until then).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

import asyncpg
import kr8s

from tuneplane.common.kube import JSON_MERGE, Kubernetes, conflict, not_found
from tuneplane.control.jobs import JobBackend, SchedulerError, Shown
from tuneplane.control.kube import manifest
from tuneplane.control.kube.manifest import LAUNCH_LABEL, MANAGED_BY, RUN_ANNOTATION, PodReach
from tuneplane.control.kube.placement import Namespaces, PlacementError
from tuneplane.control.kube.seen import COLLECTOR_REFUSED, SUSPENDED, job_seen
from tuneplane.control.kube.told import Told
from tuneplane.controlplane import runs
from tuneplane.controlplane.job_follow import JobSeen
from tuneplane.controlplane.kube_launches import SCHEDULER

log = logging.getLogger("tuneplane.control.kube")

#: How long a Job's ticket can wait for its pods to be scheduled and still be redeemed.
TICKET_TTL = 7 * 86400
SELECTOR = f"app.kubernetes.io/managed-by={MANAGED_BY}"
#: The label the Job controller gives a Job's own pods: the Job's uid.
CONTROLLER_UID = "batch.kubernetes.io/controller-uid"


class KubernetesBackend(JobBackend):
    scheduler = SCHEDULER

    def __init__(self, pool: asyncpg.Pool, kubernetes: Kubernetes, namespaces: Namespaces,
                 reach: PodReach, *, poll_seconds: float = 2.0) -> None:
        super().__init__(pool, poll_seconds=poll_seconds)
        self._kubernetes = kubernetes
        self._namespaces = namespaces
        self._reach = reach
        self._where: dict[str, tuple[str, str]] = {}  # job uid → (namespace, name)
        self._failed: set[str] = set()  # namespaces the last pass could not list
        self._told = Told(lambda namespace, plural, version, params: self._call(
            "GET", version, plural, namespace, params=params))
        self._written: dict[int, list[dict[str, Any]]] = {}  # launch → as last stored
        self._read_ending: dict[str, list[dict[str, Any]]] = {}  # Job → read by ``ending``

    async def _call(self, method: str, version: str, url: str, namespace: str,
                    **kwargs: Any) -> Any:
        try:
            return await self._kubernetes.call(method, version, url, namespace=namespace,
                                               **kwargs)
        except (kr8s.ServerError, kr8s.APITimeoutError, OSError) as exc:
            if not_found(exc) or conflict(exc):
                raise
            raise SchedulerError(f"Kubernetes API: {method} {namespace}/{url}: {exc}") from exc

    async def _listed(self, namespace: str, plural: str, version: str,
                      selector: str = SELECTOR) -> list[dict[str, Any]]:
        found = await self._call("GET", version, plural, namespace,
                                 params={"labelSelector": selector})
        return list(found.get("items", []))

    def _shown(self, namespace: str, jobs: list[dict[str, Any]],
               pods: list[dict[str, Any]]) -> tuple[dict[str, Shown], dict[str, Any]]:
        """``jobs`` as followed, each with its own pods (by the Job controller's uid label,
        which only the Job's own pods carry); and those pods by Job uid."""
        by_job: dict[str, list[dict[str, Any]]] = {}
        for pod in pods:
            uid = pod["metadata"].get("labels", {}).get(CONTROLLER_UID, "")
            by_job.setdefault(uid, []).append(pod)
        shown = {}
        for job in jobs:
            meta = job["metadata"]
            shown[meta["uid"]] = Shown(meta["name"], -1, job_seen(job, by_job.get(meta["uid"], [])))
            self._where[meta["uid"]] = (namespace, meta["name"])
        return shown, by_job

    async def jobs(self) -> Mapping[str, Shown]:
        """Every launch Job of every launch namespace; a namespace that cannot be listed is
        skipped this pass (its launches are not taken for vanished: ``unseen``)."""
        shown: dict[str, Shown] = {}
        self._failed = set()
        for namespace in self._namespaces.all():
            try:
                jobs = await self._listed(namespace, "jobs", "batch/v1")
                pods = await self._listed(namespace, "pods", "v1")
            except (SchedulerError, kr8s.ServerError) as exc:
                log.warning("launch namespace %s not listed in this pass: %s", namespace, exc)
                self._failed.add(namespace)
                continue
            listed, pods_of = self._shown(namespace, jobs, pods)
            shown.update(listed)
            for uid in [u for u, (n, _) in self._where.items() if n == namespace
                        and u not in listed]:
                del self._where[uid]  # gone: nothing more to do with it
            try:
                await self._told.listed(namespace, jobs, pods_of)
            except (SchedulerError, kr8s.ServerError) as exc:
                log.warning("launch namespace %s: events not read: %s", namespace, exc)
        return shown

    def unseen(self, job_id: str) -> bool:
        where = self._where.get(job_id)
        return bool(self._failed) if where is None else where[0] in self._failed

    async def job(self, job_id: str) -> JobSeen | None:
        """The one Job (what a sidecar's redemption asks): read by name where it was made,
        with its own pods only; None when it is not there."""
        where = self._where.get(job_id)
        if where is None:
            return await super().job(job_id)
        namespace, name = where
        job = await self._job_named(namespace, name)
        if job is None or job["metadata"]["uid"] != job_id:
            return None  # gone, or made again under its name: not the launch's Job
        pods = await self._listed(namespace, "pods", "v1", f"{CONTROLLER_UID}={job_id}")
        return self._shown(namespace, [job], pods)[0][job_id].seen

    async def _job_named(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The Job ``name`` of ``namespace`` as the API holds it, or None."""
        try:
            found: dict[str, Any] = await self._call("GET", "batch/v1", f"jobs/{name}",
                                                     namespace)
        except kr8s.ServerError as exc:
            if not_found(exc):
                return None
            raise SchedulerError(f"Job {namespace}/{name}: {exc}") from None
        return found

    async def submit_job(self, row: dict[str, Any], jobs: Mapping[str, Shown]) -> str:
        try:
            namespace = self._namespaces.of(row["project"])
            spool = self._reach.spools.of(row["project"])
        except PlacementError as exc:
            raise SchedulerError(str(exc)) from None
        launch_id = int(row["launch_id"])
        async with self._pool.acquire() as conn:  # what a pod deleted mid-run lost, said
            await conn.execute("UPDATE slurm_launches SET options = options || "
                               "jsonb_build_object('spool', $2::text) WHERE launch_id = $1",
                               launch_id, spool.kind)
        name = manifest.job_name(launch_id)
        made = await self._earlier(row, namespace, name)
        adopted = made is not None
        if made is None:
            try:
                made = await self._call("POST", "batch/v1", "jobs", namespace,
                                        body=manifest.job(row, namespace, self._reach))
            except kr8s.ServerError as exc:
                raise SchedulerError(f"Job {namespace}/{name} not made: {exc}") from None
        uid = str(made["metadata"]["uid"])
        self._where[uid] = (namespace, name)
        ticket = self.ticket(launch_id, TICKET_TTL)
        try:
            await self._call("POST", "v1", "secrets", namespace, body=manifest.secret(
                launch_id, namespace, ticket, self._reach.control_ca_pem, made))
        except kr8s.ServerError as exc:
            # Made by the control that stopped, with the Job it made; beside a Job made now,
            # a Secret under its name is someone else's (a CA of theirs): never used.
            if not (conflict(exc) and adopted):
                await self.cancel(uid)  # suspended, it would wait for ever
                raise SchedulerError(f"Secret {namespace}/{name} not made: {exc}") from None
        return uid

    async def _earlier(self, row: Mapping[str, Any], namespace: str,
                       name: str) -> dict[str, Any] | None:
        """The Job a control that stopped mid-submission made for a ``submitting`` launch:
        this launch's by name, label and annotation, never one anyone else could have made
        under that name before the launch was claimed."""
        if row["state"] != "submitting":
            return None
        found = await self._job_named(namespace, name)
        if found is None:
            return None
        meta = found["metadata"]
        ours = meta.get("labels", {}).get(LAUNCH_LABEL) == str(row["launch_id"]) and \
            meta.get("annotations", {}).get(RUN_ANNOTATION) == row["run_id"]
        if not ours:
            raise SchedulerError(f"Job {namespace}/{name} exists and is not this launch's")
        return found

    async def submitted(self, job_id: str) -> None:
        """Resume the suspended Job (retried while it shows suspended)."""
        namespace, name = self._where[job_id]
        try:
            await self._call("PATCH", "batch/v1", f"jobs/{name}", namespace,
                             body={"spec": {"suspend": False}},
                             content_type=JSON_MERGE)
        except (SchedulerError, kr8s.ServerError) as exc:
            log.warning("Job %s/%s not resumed yet: %s", namespace, name, exc)

    async def ending(self, launch_id: int, job_id: str, seen: JobSeen) -> None:
        records = await self._ended(job_id) if job_id in self._where else None
        if records is not None:
            self._read_ending[job_id] = records
            await self._store(launch_id, records)

    async def shown(self, launch_id: int, job_id: str, seen: JobSeen, state: str) -> None:
        """Resume a suspended Job, delete one whose sidecar refused, and store what
        Kubernetes said of it (read once more as its attempt ends)."""
        records = self._read_ending.pop(job_id, None)  # read just before its launch ended
        if records is None and state not in runs.LIVE_STATES and job_id in self._where:
            records = await self._ended(job_id)
        elif records is None:
            records = self._told.records.get(job_id)
        await self._store(launch_id, records)
        if state not in runs.LIVE_STATES:  # stored for good
            self._written.pop(launch_id, None)
        if seen.state == "PENDING" and seen.reason == SUSPENDED:
            await self.submitted(job_id)
        elif seen.state == "FAILED" and seen.reason == COLLECTOR_REFUSED:
            await self.cancel(job_id)  # its sidecars would be restarted for ever

    async def _store(self, launch_id: int, records: list[dict[str, Any]] | None) -> None:
        """The launch's records, written when they changed."""
        if records is not None and records != self._written.get(launch_id):
            async with self._pool.acquire() as conn:
                await conn.execute("UPDATE slurm_launches SET events = $2::jsonb WHERE "
                                   "launch_id = $1", launch_id, json.dumps(records))
            self._written[launch_id] = records

    async def _ended(self, job_id: str) -> list[dict[str, Any]] | None:
        """What Kubernetes said of the Job, read now (its attempt has just ended)."""
        namespace, name = self._where[job_id]
        try:
            job = await self._job_named(namespace, name)
            if job is None or job["metadata"]["uid"] != job_id:
                return None
            pods = await self._listed(namespace, "pods", "v1", f"{CONTROLLER_UID}={job_id}")
            return await self._told.ending(namespace, job, pods)
        except (SchedulerError, kr8s.ServerError) as exc:
            log.warning("Job %s/%s: events not read as it ended: %s", namespace, name, exc)
            return None

    async def cancel(self, job_id: str) -> None:
        where = self._where.get(job_id)
        if where is None:
            return
        namespace, name = where
        try:
            await self._call("DELETE", "batch/v1", f"jobs/{name}", namespace,
                             body={"propagationPolicy": "Background"})
        except kr8s.ServerError as exc:
            if not not_found(exc):
                raise SchedulerError(f"Job {namespace}/{name} not deleted: {exc}") from None
        log.info("Job %s/%s deleted", namespace, name)
