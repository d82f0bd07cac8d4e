"""The SlurmJobControl gRPC service: a Slurm job's collectors get their credentials here.

A ticket (``TokenKind.SLURM_TICKET``) names one launch and job; it is checked before any
database or Slurm work, the start it names against the database before Slurm is asked, then
redeemed once per node and start of the job while Slurm shows that start running and its
attempt has not ended (``tuneplane.controlplane.slurm_nodes``). What it yields, a job
credential (``TokenKind.SLURM_JOB``), names the launch, start, node and attempt, and gives
workload tokens for that node's members of that attempt only, renewed while the attempt
runs.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Protocol

import asyncpg
import grpc

from tuneplane.common.tokens import TokenError, TokenKind, TokenSigner
from tuneplane.control.calls import Context, Policy, abort_unauthenticated, pooled
from tuneplane.control.jobs import SchedulerError
from tuneplane.control.slurm.caller import JobCaller, job_caller, launch_refused, refuse
from tuneplane.control.slurm.late import LateDelivery, trees
from tuneplane.controlplane import errors, slurm_nodes
from tuneplane.controlplane.job_follow import JobSeen
from tuneplane.controlplane.slurm_nodes import Start
from tuneplane.node.v1 import node_pb2 as pb
from tuneplane.node.v1 import slurm_pb2 as spb
from tuneplane.node.v1 import slurm_pb2_grpc as spb_grpc
from tuneplane.telemetry.v1.identity import MemberKey

log = logging.getLogger("tuneplane.control.slurm")


class Scheduler(Protocol):
    """What redemption asks a job's scheduler (Slurm, Kubernetes): the job as it shows it
    now, or None when it does not know it; ``SchedulerError`` when it cannot answer."""

    async def job(self, job_id: str) -> JobSeen | None: ...


class SlurmJobControl(LateDelivery, spb_grpc.SlurmJobControlServicer):
    def __init__(self, signer: TokenSigner, pool: asyncpg.Pool, policy: Policy,
                 schedulers: Mapping[str, Scheduler],
                 clock: Callable[[], float] = time.time) -> None:
        self._signer = signer
        self._pool = pool
        self._policy = policy
        self._schedulers = schedulers  # by the launches' ``scheduler``
        self._clock = clock
        self._under_way: Counter[int] = Counter()  # redemptions asking Slurm, by launch

    def issue_ticket(self, launch_id: int, ttl_seconds: int) -> str:
        """The ticket of the launch's job script (its job id is checked at redemption)."""
        return self._signer.issue(TokenKind.SLURM_TICKET, str(launch_id), {},
                                  now=self._clock(), ttl_seconds=ttl_seconds)

    async def _start(self, request: spb.JobStart, context: Context) -> Start:
        """The start the ticket and request name, refused before any other work unless the
        ticket verifies."""
        try:
            claims = self._signer.verify(request.ticket, TokenKind.SLURM_TICKET,
                                         now=self._clock())
            launch_id = int(claims["sub"])
        except (TokenError, KeyError, ValueError) as exc:
            await abort_unauthenticated(context, f"job ticket refused: {exc}")
        return Start(launch_id, request.job_id, request.restart, request.node_index,
                     request.hostname)

    @asynccontextmanager
    async def _checked(self, start: Start, context: Context) -> AsyncIterator[Scheduler]:
        """Refuse what no answer of the scheduler's would let redeem, before it is asked;
        then admit at most one call per node of the job at once (its collectors'), each
        asking the scheduler, the others told to retry: the job's ticket is its user's to
        read, and every call for a start to come would otherwise ask the scheduler (a
        squeue), as many at once as sent. Yields the launch's scheduler."""
        async with pooled(self._pool, self._policy, context) as conn:
            try:
                checked = await slurm_nodes.check(conn, start)
            except errors.LaunchError as exc:
                await launch_refused(context, exc)
        scheduler = self._schedulers.get(checked.scheduler)
        if scheduler is None:
            await refuse(context, f"{start}: this control does not follow {checked.scheduler} "
                                  "launches")
        if self._under_way[start.launch_id] >= checked.nodes:
            await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED,
                                f"{start}: as many redemptions of the job's ticket as it has "
                                "nodes are under way; retry with backoff")
        self._under_way[start.launch_id] += 1
        try:
            yield scheduler
        finally:
            self._under_way[start.launch_id] -= 1
            if not self._under_way[start.launch_id]:
                del self._under_way[start.launch_id]

    async def _seen(self, scheduler: Scheduler, start: Start, context: Context) -> JobSeen:
        try:
            seen = await scheduler.job(start.job_id)
        except SchedulerError as exc:
            log.warning("cannot ask the scheduler about %s: %s", start, exc)
            await context.abort(grpc.StatusCode.UNAVAILABLE, "the scheduler did not answer "
                                "control; retry with backoff")
        if seen is None:
            await refuse(context, f"{start}: the scheduler does not know the job")
        return seen

    def _credentials(self, caller: JobCaller, members: list[str]) -> spb.JobCredentials:
        now, ttl = self._clock(), self._policy.workload_ttl
        credential = self._signer.issue(
            TokenKind.SLURM_JOB, f"{caller.launch_id}/{caller.restart}/{caller.node_index}",
            {"launch": caller.launch_id, "restart": caller.restart, "node": caller.node_index,
             "run": caller.run_id, "attempt": caller.attempt}, now=now, ttl_seconds=ttl)
        return spb.JobCredentials(credential=credential, expires_at=int(now) + ttl, members=[
            spb.MemberToken(member=m, token=pb.WorkloadToken(
                token=self._signer.issue_workload(MemberKey(caller.run_id, caller.attempt, m),
                                                  now=now, ttl_seconds=ttl),
                expires_at=int(now) + ttl)) for m in members])

    async def Redeem(self, request: spb.RedeemRequest, context: Context) -> spb.RedeemReply:
        start = await self._start(request.start, context)
        async with self._checked(start, context) as scheduler:
            seen = await self._seen(scheduler, start, context)
            async with pooled(self._pool, self._policy, context) as conn:
                try:
                    granted = await slurm_nodes.redeem(conn, start, seen)
                except errors.LaunchError as exc:
                    await launch_refused(context, exc)
        caller = JobCaller(start.launch_id, start.restart, start.node_index, granted.run_id,
                           granted.attempt)
        collector = pb.CollectorConfig()
        collector.CopyFrom(self._policy.collector)
        collector.integration_json = granted.artifact
        log.info("%s redeemed its ticket on %s: %s attempt %d, members %s", start,
                 start.hostname, granted.run_id, granted.attempt, ", ".join(granted.members))
        return spb.RedeemReply(run_id=granted.run_id, attempt=granted.attempt,
                               project=granted.project, collector=collector,
                               credentials=self._credentials(caller, granted.members))

    async def Refuse(self, request: spb.RefuseRequest, context: Context) -> spb.RefuseReply:
        start = await self._start(request.start, context)
        async with self._checked(start, context) as scheduler:
            seen = await self._seen(scheduler, start, context)
            async with pooled(self._pool, self._policy, context) as conn:
                try:
                    await slurm_nodes.refuse(conn, start, seen, request.reason)
                except errors.LaunchError as exc:
                    await launch_refused(context, exc)
        log.warning("%s refused to run: %s", start, request.reason)
        return spb.RefuseReply()

    def _caller(self, context: Context) -> JobCaller | str:
        return job_caller(self._signer, context, self._clock())

    async def Renew(self, request: spb.RenewJobRequest,
                    context: Context) -> spb.JobCredentials:
        caller = self._caller(context)
        if isinstance(caller, str):
            await abort_unauthenticated(context, caller)
        async with pooled(self._pool, self._policy, context) as conn:
            try:
                members = await slurm_nodes.renewable(
                    conn, caller.launch_id, caller.restart, caller.node_index, caller.attempt)
            except errors.LaunchError as exc:
                await launch_refused(context, exc)
        return self._credentials(caller, members)

    async def Report(self, request: spb.JobNodeReport,
                     context: Context) -> spb.JobNodeReportReply:
        caller = self._caller(context)
        if isinstance(caller, str):
            await abort_unauthenticated(context, caller)
        try:
            left = trees(request.spools, request.undelivered_by_member)
        except ValueError as exc:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        async with pooled(self._pool, self._policy, context) as conn:
            try:
                state, counts = await slurm_nodes.report(
                    conn, caller.launch_id, caller.restart, caller.node_index,
                    undelivered=request.undelivered_batches, detail=request.detail,
                    by_member=dict(request.undelivered_by_member),
                    trees={m: (epoch, n) for m, (n, epoch, _) in left.items()})
            except errors.LaunchError as exc:
                await launch_refused(context, exc)
        log.info("launch %d node %d (start %d): drained, %d batches left spooled%s",
                 caller.launch_id, caller.node_index, caller.restart,
                 request.undelivered_batches, f": {request.detail}" if request.detail else "")
        return spb.JobNodeReportReply(attempt_state=state,
                                      delivery=self.delivery_tokens(caller, left, counts))
