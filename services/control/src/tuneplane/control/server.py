"""The NodeControl gRPC service: node credentials only, its own RPC cap and database pool.

A call is admitted (token, the node's call rate: ``tuneplane.control.gate``) before
it takes a pooled connection, and does its database work on one connection: a heartbeat
in one statement (``tuneplane.controlplane.heartbeats``).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import time
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import NoReturn

import asyncpg
import grpc

from tuneplane.common.db import Connection
from tuneplane.common.gateway.listener import bearer_token
from tuneplane.common.metrics.calls import CallMetrics
from tuneplane.common.tokens import TokenKind, TokenSigner
from tuneplane.control import metrics
from tuneplane.control.calls import Context, Policy, abort_unauthenticated, pooled
from tuneplane.control.gate import NodeAdmission, NodeCaller, Refused
from tuneplane.controlplane import errors, heartbeats, launches, nodes
from tuneplane.node.v1 import node_pb2 as pb
from tuneplane.node.v1 import node_pb2_grpc as pb_grpc
from tuneplane.node.v1 import slurm_pb2_grpc as spb_grpc
from tuneplane.telemetry.v1.delivery import committed_tree
from tuneplane.telemetry.v1.identity import MemberKey

log = logging.getLogger("tuneplane.control")

#: Calls one connection (one node: TLS ends here, never at a proxy) has in flight at once;
#: an agent's further calls wait in its own channel, costing control nothing.
CALLS_PER_CONNECTION = 8

REPORTED = {pb.LaunchReport.STATE_RUNNING: "running", pb.LaunchReport.STATE_FINISHED: "finished",
            pb.LaunchReport.STATE_FAILED: "failed", pb.LaunchReport.STATE_REFUSED: "refused",
            pb.LaunchReport.STATE_WAITING: launches.WAITING}


class NodeControl(pb_grpc.NodeControlServicer):
    def __init__(self, signer: TokenSigner, pool: asyncpg.Pool, policy: Policy,
                 clock: Callable[[], float] = time.time,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self._signer = signer
        self._pool = pool
        self._policy = policy
        self._clock = clock
        self._monotonic = monotonic
        self._admission = NodeAdmission(signer, policy.call_rate)
        self._held = 0

    def _now(self) -> dt.datetime:
        return dt.datetime.fromtimestamp(int(self._clock()), dt.UTC)

    def _db(self, context: Context) -> AbstractAsyncContextManager[Connection]:
        return pooled(self._pool, self._policy, context)

    async def _caller(self, context: Context) -> NodeCaller:
        """The calling node, from a token that verifies, within its call rate; or the call
        is refused before any database work."""
        found = self._admission.check(bearer_token(context), self._clock(), self._monotonic())
        if isinstance(found, Refused):
            if found.hold > 0 and self._held < self._policy.max_held:
                self._held += 1
                try:
                    await asyncio.sleep(found.hold)
                finally:
                    self._held -= 1
            await context.abort(found.code, found.message)
            raise AssertionError("unreachable")  # abort raises
        return found

    async def _check(self, conn: Connection, caller: NodeCaller, context: Context) -> None:
        """Refuse the call unless the node still stands (not revoked nor re-enrolled)."""
        refusal = await nodes.check_credential(conn, caller.node_id, caller.issued_at,
                                               now=self._now())
        if refusal is not None:
            await self._refuse(caller, refusal, context)

    async def _refuse(self, caller: NodeCaller, refusal: nodes.Refusal,
                      context: Context) -> NoReturn:
        """Refuse a node the database does not let stand; its tokens from before its latest
        enrollment are refused before its call rate from now on."""
        if refusal.replaced_before is not None:
            self._admission.replaced_before(caller.node_id, refusal.replaced_before)
        await abort_unauthenticated(context, refusal.reason)

    def _node_token(self, node_id: str) -> tuple[str, int]:
        now = self._clock()
        token = self._signer.issue(TokenKind.NODE, node_id, {}, now=now,
                                   ttl_seconds=self._policy.node_ttl)
        return token, int(now) + self._policy.node_ttl

    def _workload_token(self, member: MemberKey, node_id: str) -> pb.WorkloadToken:
        """A token for the member, naming the node it goes through: revoking the node ends
        it at ingest."""
        now = self._clock()
        ttl = self._policy.workload_ttl
        return pb.WorkloadToken(token=self._signer.issue_workload(member, now=now,
                                                                  ttl_seconds=ttl, node=node_id),
                                expires_at=int(now) + ttl)

    async def Enroll(self, request: pb.EnrollRequest, context: Context) -> pb.EnrollReply:
        async with self._db(context) as conn:
            try:
                enrolled = await nodes.enroll(conn, request.enrollment_token, request.hostname,
                                              now=self._now())
            except errors.EnrollmentError as exc:
                await abort_unauthenticated(context, str(exc))
        token, expires = self._node_token(enrolled.node_id)
        log.info("node %s enrolled as %s (%s)", enrolled.name, enrolled.node_id,
                 request.hostname)
        return pb.EnrollReply(node_id=enrolled.node_id, node_token=token,
                              node_token_expires_at=expires)

    async def Heartbeat(self, request: pb.HeartbeatRequest,
                        context: Context) -> pb.HeartbeatReply:
        caller = await self._caller(context)
        node_id = caller.node_id
        async with self._db(context) as conn:
            beat = await heartbeats.beat(conn, node_id, caller.issued_at, now=self._now())
        if beat.refused is not None:
            await self._refuse(caller, beat.refused, context)
        reply = pb.HeartbeatReply(next_heartbeat_seconds=self._policy.heartbeat_seconds)
        if caller.expires_at - self._clock() < self._policy.node_ttl / 4:
            reply.renewed_node_token = self._node_token(node_id)[0]
        for a in beat.launches:
            collector = pb.CollectorConfig()
            collector.CopyFrom(self._policy.collector)
            collector.integration_json = a.artifact
            reply.launches.append(pb.Launch(
                launch_id=a.launch_id, run_id=a.member.run_id, attempt=a.member.attempt,
                member=a.member.member, command=a.command, environment=a.environment,
                collector=collector, token=self._workload_token(a.member, node_id),
                project=a.project))
        return reply

    async def ReportLaunch(self, request: pb.LaunchReport,
                           context: Context) -> pb.LaunchReportReply:
        caller = await self._caller(context)
        node_id = caller.node_id
        state = REPORTED.get(request.state)
        if state is None or request.undelivered_batches < 0:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"launch {request.launch_id}: "
                                + ("no state reported" if state is None else "a launch reports "
                                   "how many batches it left, not "
                                   f"{request.undelivered_batches}"))
        async with self._db(context) as conn:
            await self._check(conn, caller, context)
            try:
                attempt_state = await launches.report(
                    conn, node_id, request.launch_id, state, exit_code=request.exit_code,
                    detail=request.detail, undelivered=request.undelivered_batches,
                    now=self._now())
            except errors.LaunchError as exc:
                await context.abort(grpc.StatusCode.FAILED_PRECONDITION, str(exc))
        log.info("launch %d on %s: %s %s", request.launch_id, node_id, state, request.detail)
        return pb.LaunchReportReply(attempt_state=attempt_state)

    async def RenewWorkloadToken(self, request: pb.RenewRequest,
                                 context: Context) -> pb.WorkloadToken:
        caller = await self._caller(context)
        node_id = caller.node_id
        async with self._db(context) as conn:
            await self._check(conn, caller, context)
            try:
                member = await launches.member_of(conn, node_id, request.launch_id)
            except errors.LaunchError as exc:
                await context.abort(grpc.StatusCode.FAILED_PRECONDITION, str(exc))
        return self._workload_token(member, node_id)

    async def IssueDeliveryToken(self, request: pb.DeliveryRequest,
                                 context: Context) -> pb.WorkloadToken:
        caller = await self._caller(context)
        try:
            tree = launches.Tree(*committed_tree(request.epoch, request.root, request.batches),
                                 request.batches)
        except ValueError as exc:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                                f"launch {request.launch_id}: {exc}")
        now = self._clock()
        async with self._db(context) as conn:
            await self._check(conn, caller, context)
            try:
                member, until = await launches.left_in_spool(
                    conn, caller.node_id, request.launch_id, tree, self._now())
            except errors.LaunchError as exc:
                await context.abort(grpc.StatusCode.FAILED_PRECONDITION, str(exc))
        ttl = max(1, min(self._policy.delivery_ttl, int(until.timestamp() - now)))
        token = self._signer.issue_delivery(member, tree.epoch, tree.root, tree.batches,
                                            now=now, ttl_seconds=ttl, node=caller.node_id)
        log.info("launch %d on %s: deliver-only credential for %d batches of %s",
                 request.launch_id, caller.node_id, request.batches, member)
        return pb.WorkloadToken(token=token, expires_at=int(now) + ttl)


def create_server(service: NodeControl, *, max_concurrent_rpcs: int,
                  slurm: spb_grpc.SlurmJobControlServicer | None = None) -> grpc.aio.Server:
    """The control server: Node control, and Slurm job control when ``slurm`` is given; each
    call answered is counted and timed (``metrics``)."""
    server = grpc.aio.server(maximum_concurrent_rpcs=max_concurrent_rpcs,
                             interceptors=[CallMetrics(metrics.observe)],
                             options=[("grpc.max_receive_message_length", 1024 * 1024),
                                      ("grpc.max_concurrent_streams", CALLS_PER_CONNECTION)])
    pb_grpc.add_NodeControlServicer_to_server(service, server)
    if slurm is not None:
        spb_grpc.add_SlurmJobControlServicer_to_server(slurm, server)
    return server

