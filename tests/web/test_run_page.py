"""A run's page in headless Chromium: its attempts with their managed state, telemetry,
launches and undelivered batches, the members of the attempt chosen (kept in the URL), and
a run known only by its telemetry; under the page's Content-Security-Policy."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import secrets
import time

import asyncpg

from tests.support.browser import ARTIFACTS, PASSWORD, opened_page, sign_in
from tests.support.control import new_run
from tests.support.credentials import add_user
from tests.support.environment import Endpoints
from tests.support.kafka import produce
from tests.support.processes import Process
from tests.support.truth import member_batch
from tuneplane.controlplane import (
    job_follow,
    kube_launches,
    launches,
    passwords,
    runs,
    slurm_launches,
    slurm_nodes,
)
from tuneplane.telemetry.v1.identity import MemberKey


async def cells(row: object) -> list[str]:
    return [await td.inner_text() for td in await row.locator("td").all()]  # type: ignore[attr-defined]


async def test_a_run_page_shows_attempts_members_launches_and_what_stayed_undelivered(
        initialised: Endpoints, projector: Process, web: Process, db: asyncpg.Connection,
        run_id: str) -> None:
    user = await add_user(db, "viewer", roles={"default": "viewer"})
    await passwords.set_password(db, user, PASSWORD)
    await new_run(db, run_id)
    node = f"node-{secrets.token_hex(4)}"
    node_id = await db.fetchval("INSERT INTO nodes (node_id, name, hostname, enrolled_at) "
                                "VALUES ($1, $2, 'gpu-7', now()) RETURNING node_id",
                                f"node-{secrets.token_hex(8)}", node)
    now = dt.datetime.now(dt.UTC)
    _, (first, second) = await launches.create(db, run_id, node, ["rank-0", "rank-1"],
                                               ["python", "train.py"], {})
    await launches.report(db, node_id, first, "finished", exit_code=0, detail="",
                          undelivered=0, now=now)
    await launches.report(db, node_id, second, "failed", exit_code=3,
                          detail="CUDA error: out of memory", undelivered=2, now=now)
    await launches.create(db, run_id, node, ["rank-0"], ["python", "train.py"], {})
    # rank-1's third batch comes from a second spool (its first was lost): two spools; it
    # was delivered late (`tuneplane-collector deliver`).
    sent = [member_batch(MemberKey(run_id, 1, f"rank-{m}"), seq, 100,
                         epoch="e2" if (m, seq) == (1, 3) else "e")
            for seq in range(1, 4) for m in range(2)]
    telemetry_only = f"{run_id}-bare"
    sent.append(member_batch(MemberKey(telemetry_only, 1, "rank-0"), 1, 10))
    late = [b for b in sent if b.identity.spool_epoch == "e2"]
    await produce(initialised.kafka_bootstrap, [b for b in sent if b not in late])
    await produce(initialised.kafka_bootstrap, late, late=True)
    deadline = time.monotonic() + 120
    while await db.fetchval("SELECT count(*) FROM batch_ledger WHERE run_id LIKE $1",
                            f"{run_id}%") < len(sent):
        assert time.monotonic() < deadline
        await asyncio.sleep(0.1)
    base = f"http://localhost:{web.port}"
    async with opened_page(height=800) as opened:
        page, errors = opened.page, opened.errors
        await page.goto(f"{base}/runs/{run_id}")
        assert page.url.endswith(f"/login?next=/runs/{run_id}")
        await sign_in(page, user, PASSWORD)
        await page.wait_for_url(f"**/runs/{run_id}")
        await page.wait_for_selector("body[data-ready=true]")
        assert await page.locator("#project").inner_text() == "default"
        assert "by test" in await page.locator("#created").inner_text()
        assert await page.locator("#undelivered").inner_text() == "2 batches"
        assert await page.locator("#late-count").inner_text() == "1 batch"
        assert await page.locator("#late-section").is_hidden()  # none in attempt 2
        rows = page.locator("#attempts tbody tr")
        assert await rows.count() == 2
        one = await cells(rows.nth(0))
        assert one[:2] == ["#1", "failed"]  # a member failed
        assert one[4:7] == ["2", "6", "600"]  # members, batches, points
        assert one[8:10] == ["2", "2"]  # launches, undelivered
        assert await rows.nth(0).locator("td.warn").count() == 1
        two = await cells(rows.nth(1))
        assert two[:2] == ["#2", "running"]
        assert two[4:7] == ["0", "0", "0"]  # launched, no telemetry yet
        assert await page.locator("tr.selected").get_attribute("data-attempt") == "2"
        assert await page.locator("#members tbody tr").count() == 1  # the latest attempt
        assert (await cells(page.locator("#members tbody tr")))[:3] == ["rank-0", "pending",
                                                                        node]

        await page.click("#attempts a:text-is('#1')")  # another attempt, kept in the URL
        await page.locator("#selected", has_text="#1").wait_for()
        assert page.url.endswith("?attempt=1")
        members = page.locator("#members tbody tr")
        await members.nth(1).wait_for()
        finished = await cells(members.nth(0))
        assert finished[:8] == ["rank-0", "finished", node, "0", "train", "2", "300", "1"]
        assert finished[8] != "—"  # its last telemetry
        assert finished[9:] == ["0", "—"]
        failed = await cells(members.nth(1))
        assert failed[1:4] == ["failed", node, "3"]
        assert failed[7] == "2"  # its spool was replaced once
        assert "spool replaced 1 time" in (
            await members.nth(1).locator("td").nth(7).get_attribute("title") or "")
        assert failed[9:] == ["2", "CUDA error: out of memory"]
        late_rows = page.locator("#late tbody tr")
        assert await late_rows.count() == 1
        delivered = await cells(late_rows.nth(0))
        assert (delivered[0], delivered[2]) == ("rank-1", "100")
        assert "e2" in delivered[1]
        assert await page.locator("#late-of").inner_text() == "#1"
        href = await page.get_attribute("#charts-link", "href")
        assert href == f"/runs/{run_id}/charts?attempt=1"
        await page.screenshot(path=str(ARTIFACTS / "run.png"), full_page=True)
        await page.go_back()  # back: the latest attempt again
        await page.locator("#selected", has_text="#2").wait_for()

        await page.goto(f"{base}/runs/{telemetry_only}")
        await page.wait_for_selector("body[data-ready=true]")
        assert await page.locator("#created").inner_text() == "known by its telemetry only"
        assert (await cells(page.locator("#attempts tbody tr")))[:2] == ["#1",
                                                                         "telemetry only"]
    # The one failed request: the managed record a run known only by telemetry lacks.
    assert errors == ["Failed to load resource: the server responded with a status of 404 "
                      "(Not Found)"]


async def test_a_run_page_shows_a_slurm_jobs_starts_as_attempts_and_its_ranks_as_members(
        web: Process, db: asyncpg.Connection, run_id: str) -> None:
    user = await add_user(db, "viewer", roles={"default": "viewer"})
    await passwords.set_password(db, user, PASSWORD)
    await runs.create_run(db, {"version": 1, "sources": [
        {"id": f"m{r}", "kind": "jsonl", "path": f"r{r}.jsonl", "owner": f"rank-{r}"}
        for r in range(4)]}, created_by="test", now=dt.datetime.now(dt.UTC), run_id=run_id)
    launch_id = (await slurm_launches.create(
        db, run_id, nodes=2, tasks_per_node=2, command=["python", "train.py"],
        environment={}, spool_root="/local/tuneplane",
        options=slurm_launches.JobOptions())).launch_id
    await db.execute("UPDATE slurm_launches SET state = 'submitted', job_id = '4242' "
                     "WHERE launch_id = $1", launch_id)
    Seen = job_follow.JobSeen
    for node in (0, 1):  # the first start: both nodes' collectors, then a preemption
        start = slurm_nodes.Start(launch_id, "4242", 0, node, f"gpu-{node}")
        await slurm_nodes.redeem(db, start, Seen("RUNNING", 0))
    await job_follow.follow(db, launch_id, Seen("PENDING", 1, "BeginTime"))
    await slurm_nodes.report(db, launch_id, 0, 0, undelivered=0, detail="",
                                  by_member={"rank-0": 0, "rank-1": 0})
    await slurm_nodes.report(db, launch_id, 0, 1, undelivered=3, detail="rank-3: 3",
                                  by_member={"rank-3": 3})
    second = slurm_nodes.Start(launch_id, "4242", 1, 0, "gpu-0")
    await slurm_nodes.redeem(db, second, Seen("RUNNING", 1))
    refused = "gpu-1: spool root refused: spool directory /local/tuneplane is on NFS"
    await slurm_nodes.refuse(db, slurm_nodes.Start(launch_id, "4242", 1, 1, "gpu-1"),
                                  Seen("RUNNING", 1), refused)
    await job_follow.follow(db, launch_id, Seen("FAILED", 1, "NonZeroExitCode", "1:0",
                                                    f"tuneplane: refused: {refused}"))
    async with opened_page(height=800) as opened:
        page, errors = opened.page, opened.errors
        missing: list[str] = []
        page.on("response", lambda r: missing.append(r.url) if r.status == 404 else None)
        await page.goto(f"http://localhost:{web.port}/runs/{run_id}")
        await sign_in(page, user, PASSWORD)
        await page.wait_for_url(f"**/runs/{run_id}")
        await page.wait_for_selector("body[data-ready=true]")
        assert await page.locator("#undelivered").inner_text() == "3 batches"
        rows = page.locator("#attempts tbody tr")
        assert await rows.count() == 2
        one, two = await cells(rows.nth(0)), await cells(rows.nth(1))
        assert (one[:2], one[8:10]) == (["#1", "preempted"], ["4", "3"])
        assert (two[:2], two[8:10]) == (["#2", "failed"], ["4", "0"])
        members = [await cells(r) for r in await page.locator("#members tbody tr").all()]
        assert [m[:3] for m in members] == [
            ["rank-0", "failed", "gpu-0 · job 4242"], ["rank-1", "failed", "gpu-0 · job 4242"],
            ["rank-2", "refused", "gpu-1 · job 4242"], ["rank-3", "refused", "gpu-1 · job 4242"]]
        assert members[2][10] == refused
        # gpu-0's collector of start 1 never reported its drain (its node's spool is kept).
        assert members[0][10].startswith("its collector never reported its drain; job failed "
                                         "(exit 1:0); tuneplane: refused: gpu-1")
        await page.screenshot(path=str(ARTIFACTS / "run-slurm.png"), full_page=True)
        await page.click("#attempts a:text-is('#1')")
        await page.locator("#selected", has_text="#1").wait_for()
        await page.locator("#members tbody tr").nth(3).wait_for()
        first = [await cells(r) for r in await page.locator("#members tbody tr").all()]
        assert [(m[0], m[1], m[9]) for m in first] == [
            ("rank-0", "preempted", "0"), ("rank-1", "preempted", "0"),
            ("rank-2", "preempted", "0"), ("rank-3", "preempted", "3")]
        assert first[0][10] == "this start of job 4242 was preempted; the job ran again"
        await page.screenshot(path=str(ARTIFACTS / "run-slurm-preempted.png"), full_page=True)
    # The only failed requests: the run's telemetry (it has none), on each load.
    telemetry = f"http://localhost:{web.port}/api/v1/runs/{run_id}/attempts"
    assert missing == [telemetry, telemetry]
    assert errors == ["Failed to load resource: the server responded with a status of 404 "
                      "(Not Found)"] * 2


async def test_a_run_page_shows_a_kubernetes_jobs_pods_events_and_a_destroyed_spool(
        web: Process, db: asyncpg.Connection, run_id: str) -> None:
    """Attempt 1's Job had a pod evicted (preempted: queued again as attempt 2); attempt 2's
    index 1 was force-deleted before its sidecar reported: its emptyDir spool is lost. What
    Kubernetes said of each attempt's Job is listed with it."""
    user = await add_user(db, "viewer", roles={"default": "viewer"})
    await passwords.set_password(db, user, PASSWORD)
    await runs.create_run(db, {"version": 1, "sources": [
        {"id": f"m{r}", "kind": "jsonl", "path": f"r{r}.jsonl", "owner": f"rank-{r}"}
        for r in range(2)]}, created_by="test", now=dt.datetime.now(dt.UTC), run_id=run_id)
    first = (await kube_launches.create(db, run_id, indexes=2,
                                        pod=kube_launches.PodSpec("trainer:1"),
                                        command=["python", "train.py"],
                                        environment={})).launch_id
    Seen = job_follow.JobSeen

    async def ran(launch_id: int, job_id: str, events: list[dict[str, object]]) -> None:
        await db.execute("UPDATE slurm_launches SET state = 'submitted', job_id = $2, "
                         "events = $3::jsonb, options = options || '{\"spool\": \"emptyDir\"}'"
                         " WHERE launch_id = $1", launch_id, job_id, json.dumps(events))
        for index in (0, 1):
            start = slurm_nodes.Start(launch_id, job_id, 0, index,
                                      f"tuneplane-launch-{launch_id}-{index}-x{job_id[-2:]}")
            await slurm_nodes.redeem(db, start, Seen("RUNNING", 0))

    def said(at: str, kind: str, reason: str, what: str, message: str) -> dict[str, object]:
        return {"at": f"2026-12-06T10:{at}Z", "type": kind, "reason": reason,
                "object": what, "message": message, "count": 1}

    await ran(first, "uid-a1", [
        said("00:01", "Normal", "SuccessfulCreate", f"job/tuneplane-launch-{first}",
             f"Created pod: tuneplane-launch-{first}-0-xa1"),
        said("03:10", "Warning", "PodFailurePolicy", f"job/tuneplane-launch-{first}",
             f"Pod jobs/tuneplane-launch-{first}-0-xa1 has condition DisruptionTarget "
             "matching FailJob rule at index 0")])
    for index in (0, 1):
        await slurm_nodes.report(db, first, 0, index, undelivered=0, detail="",
                                 by_member={f"rank-{index}": 0})
    await job_follow.follow(db, first, Seen("PREEMPTED", 0, "DisruptionTarget", comment=(
        f"tuneplane-launch-{first}-0-xa1: EvictionByEvictionAPI: Eviction API: evicting")))
    second = await db.fetchval("SELECT max(launch_id) FROM slurm_launches WHERE run_id = $1",
                               run_id)
    await ran(second, "uid-b2", [
        said("04:02", "Warning", "FailedScheduling", f"pod/tuneplane-launch-{second}-1-xb2",
             "0/1 nodes are available: 1 Insufficient memory."),
        said("05:40", "Warning", "OOMKilled", f"pod/tuneplane-launch-{second}-0-xb2",
             "container training exited 137")])
    await slurm_nodes.report(db, second, 0, 0, undelivered=0, detail="",
                             by_member={"rank-0": 0})
    await job_follow.follow(db, second, Seen("FAILED", 0, "BackoffLimitExceeded"))
    async with opened_page(height=900) as opened:
        page = opened.page
        await page.goto(f"http://localhost:{web.port}/runs/{run_id}")
        await sign_in(page, user, PASSWORD)
        await page.wait_for_url(f"**/runs/{run_id}")
        await page.wait_for_selector("body[data-ready=true]")
        assert await page.locator("#undelivered").inner_text() == \
            "0 batches · 1 spool lost with its pod"
        rows = [await cells(r) for r in await page.locator("#attempts tbody tr").all()]
        assert [(r[0], r[1], r[9]) for r in rows] == [("#1", "preempted", "0"),
                                                      ("#2", "failed", "lost")]
        members = [await cells(r) for r in await page.locator("#members tbody tr").all()]
        assert [m[:3] for m in members] == [
            ["rank-0", "failed", f"pod tuneplane-launch-{second}-0-xb2"],
            ["rank-1", "failed", f"pod tuneplane-launch-{second}-1-xb2"]]
        assert (members[0][9], members[1][9]) == ("0", "lost")
        assert "the spool (an emptyDir) was destroyed with it" in members[1][10]
        events = [await cells(r) for r in await page.locator("#events tbody tr").all()]
        assert [e[1:3] for e in events] == [["Warning", "FailedScheduling"],
                                            ["Warning", "OOMKilled"]]
        await page.screenshot(path=str(ARTIFACTS / "run-kubernetes.png"), full_page=True)
        await page.click("#attempts a:text-is('#1')")
        await page.locator("#events-of", has_text="#1").wait_for()
        events = [await cells(r) for r in await page.locator("#events tbody tr").all()]
        assert [e[2] for e in events] == ["SuccessfulCreate", "PodFailurePolicy"]
        members = [await cells(r) for r in await page.locator("#members tbody tr").all()]
        assert members[0][10].startswith(f"job preempted; tuneplane-launch-{first}-0-xa1: "
                                         "EvictionByEvictionAPI")
        assert members[0][10].endswith(f"queued again as launch {second}, attempt 2")
        await page.screenshot(path=str(ARTIFACTS / "run-kubernetes-preempted.png"),
                              full_page=True)
