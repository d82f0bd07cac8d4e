"""Whether a batch pushed under a delivery token is one the token covers: of its member and
spool epoch, and a leaf of its tree of sealed batches (the audit path in the call's
metadata, checked against the token's root). Anything else is refused, so a delivery
token can add no data and alter none."""

from __future__ import annotations

from collections.abc import Iterable

from tuneplane.common.tokens import DeliveryClaims
from tuneplane.telemetry.v1 import delivery
from tuneplane.telemetry.v1.identity import BatchKey


def proof_in(metadata: Iterable[tuple[str, str | bytes]]) -> str | None:
    for key, value in metadata:
        if key == delivery.PROOF_HEADER and isinstance(value, str):
            return value
    return None


def refusal(claims: DeliveryClaims, key: BatchKey, epoch: str, sequence: int,
            payload: bytes, proof_text: str | None) -> str | None:
    """Why the batch may not be delivered with ``claims``, or None."""
    if key.member != claims.member:
        return f"batch {key} is not for the delivery token's member {claims.member}"
    if epoch != claims.epoch:
        return (f"batch {key} is of spool epoch {epoch!r}; the delivery token covers "
                f"{claims.epoch!r} only")
    if proof_text is None:
        return f"batch {key} carries no {delivery.PROOF_HEADER}"
    try:
        proof = delivery.Proof.parse(proof_text)
    except delivery.BadProof as exc:
        return f"batch {key}: {exc}"
    if not delivery.verify(proof, delivery.leaf(sequence, payload), claims.batches,
                           claims.root):
        return (f"batch {key} is not one of the {claims.batches} sealed batches the delivery "
                "token covers (or its bytes changed)")
    return None
