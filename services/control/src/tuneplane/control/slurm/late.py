"""Late delivery for Slurm jobs: what a node's drain left in its members' spools, delivered
once ingest is reachable again, by whoever holds the spool then (the user's next job on that
host, or the user with ``tuneplane-collector deliver``).

The node's end report names the tree of each spool it left (its epoch, the Merkle root of
its sealed batches and their count), and its answer carries a deliver-only credential for
exactly that tree, bound to the job node (``launch/restart/node``), never for more batches
than the report counts, and only while the job credential stands: once the job has ended no
credential is issued for it any more. Ingest admits, under one, that tree's batches byte for
byte and nothing else. The spool's holder, having delivered it, says so under the same
credential (``ReportDelivered``), and the node's report of the member shrinks to what is
left (quarantined batches), never grows.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence

import asyncpg
import grpc

from tuneplane.common.gateway.listener import bearer_token
from tuneplane.common.tokens import TokenError, TokenSigner
from tuneplane.control.calls import Context, Policy, abort_unauthenticated, pooled
from tuneplane.control.slurm.caller import JobCaller, refuse
from tuneplane.controlplane import errors, slurm_nodes
from tuneplane.node.v1 import node_pb2 as pb
from tuneplane.node.v1 import slurm_pb2 as spb
from tuneplane.telemetry.v1.delivery import committed_tree
from tuneplane.telemetry.v1.identity import MemberKey

log = logging.getLogger("tuneplane.control.slurm")

#: A spool's tree as a report names it: batches, epoch and root.
Tree = tuple[int, str, bytes]


def trees(spools: Sequence[spb.SpoolLeft]) -> dict[str, Tree]:
    """The tree of each member's spool a report names, checked (ValueError says why)."""
    found: dict[str, Tree] = {}
    for spool in spools:
        if spool.member in found:
            raise ValueError(f"the spool of {spool.member!r} is named twice")
        try:
            found[spool.member] = (spool.batches, *committed_tree(spool.epoch, spool.root,
                                                                   spool.batches))
        except ValueError as exc:
            raise ValueError(f"the spool of {spool.member!r}: {exc}") from None
    return found


class LateDelivery:
    """SlurmJobControl's part in late delivery (mixed into the service)."""

    _signer: TokenSigner
    _pool: asyncpg.Pool
    _policy: Policy
    _clock: Callable[[], float]

    def delivery_tokens(self, caller: JobCaller, left: Mapping[str, Tree],
                        counts: Mapping[str, int]) -> list[spb.MemberToken]:
        """A deliver-only credential per spool the report names, each within what it counts
        left of that member; a spool it counts fewer batches of is refused (ValueError)."""
        for member, (batches, _, _) in left.items():
            if batches > counts.get(member, 0):
                raise ValueError(f"the report counts {counts.get(member, 0)} batches of "
                                 f"{member} left, not the {batches} its spool's tree holds")
        now, ttl = self._clock(), self._policy.delivery_ttl
        job = f"{caller.launch_id}/{caller.restart}/{caller.node_index}"
        return [spb.MemberToken(member=member, token=pb.WorkloadToken(
            token=self._signer.issue_delivery(
                MemberKey(caller.run_id, caller.attempt, member), epoch, root, batches,
                now=now, ttl_seconds=ttl, job=job), expires_at=int(now) + ttl))
            for member, (batches, epoch, root) in sorted(left.items())]

    async def ReportDelivered(self, request: spb.DeliveredReport,
                              context: Context) -> spb.JobNodeReportReply:
        try:
            claims = self._signer.verify_delivery(bearer_token(context) or "",
                                                  now=self._clock())
        except TokenError as exc:
            await abort_unauthenticated(context, f"delivery credential refused: {exc}")
        if claims.job is None:
            await abort_unauthenticated(context, "the delivery credential was not issued to a "
                                        "Slurm job's collector")
        if not 0 <= request.left <= claims.batches:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                                f"left must be 0..{claims.batches}, not {request.left}")
        async with pooled(self._pool, self._policy, context) as conn:
            try:
                state = await slurm_nodes.delivered_late(conn, claims.job, claims.member,
                                                         request.left)
            except errors.LaunchError as exc:
                await refuse(context, str(exc))
        log.info("job node %s: the spool of %s was delivered late, %d batches left",
                 claims.job, claims.member, request.left)
        return spb.JobNodeReportReply(attempt_state=state)
