"""Late delivery for Slurm jobs: what a node's drain left in its members' spools, delivered
once ingest is reachable again, by whoever holds the spool then (the user's next job on that
host, or the user with ``tuneplane-collector deliver``).

The node's end report names the tree of each spool it left (its epoch, the Merkle root of
its sealed batches and their count), and its answer carries a deliver-only credential for
exactly that tree, bound to the job node (``launch/restart/node``), never for more batches
than the report counts, and only while the job credential stands: once the job has ended no
credential is issued for it any more. Ingest admits, under one, that tree's batches byte for
byte and nothing else. What the node is listed as having left shrinks as the read models
hold that spool's batches as delivered late (``slurm_nodes.listing``): by what ingest took,
never by what a holder of the credential says.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence

import asyncpg

from tuneplane.common.tokens import TokenSigner
from tuneplane.control.calls import Policy
from tuneplane.control.slurm.caller import JobCaller
from tuneplane.node.v1 import node_pb2 as pb
from tuneplane.node.v1 import slurm_pb2 as spb
from tuneplane.telemetry.v1.delivery import committed_tree
from tuneplane.telemetry.v1.identity import MemberKey

log = logging.getLogger("tuneplane.control.slurm")

#: A spool's tree as a report names it: batches, epoch and root.
Tree = tuple[int, str, bytes]


def trees(spools: Sequence[spb.SpoolLeft], counts: Mapping[str, int]) -> dict[str, Tree]:
    """The tree of each member's spool a report names, checked, each within what the report
    ``counts`` left of that member (ValueError says why)."""
    found: dict[str, Tree] = {}
    for spool in spools:
        if spool.batches > counts.get(spool.member, 0):
            raise ValueError(f"the report counts {counts.get(spool.member, 0)} batches of "
                             f"{spool.member!r} left, not the {spool.batches} its spool's "
                             "tree holds")
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
        """A deliver-only credential per spool the report names of the node's own members
        (``counts``, as kept), each within what the report counts left of that member."""
        left = {m: tree for m, tree in left.items() if tree[0] <= counts.get(m, 0)}
        now, ttl = self._clock(), self._policy.delivery_ttl
        job = f"{caller.launch_id}/{caller.restart}/{caller.node_index}"
        return [spb.MemberToken(member=member, token=pb.WorkloadToken(
            token=self._signer.issue_delivery(
                MemberKey(caller.run_id, caller.attempt, member), epoch, root, batches,
                now=now, ttl_seconds=ttl, job=job), expires_at=int(now) + ttl))
            for member, (batches, epoch, root) in sorted(left.items())]
