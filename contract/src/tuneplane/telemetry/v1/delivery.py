"""What a deliver-only credential commits to: the sealed batches of one spool, as the root
of a Merkle tree (RFC 9162 §2.1: leaves hashed with a 0x00 prefix, nodes with 0x01, a tree
of n leaves split at the largest power of two below n).

A leaf is one batch: ``SHA-256(0x00 || sequence as 8 bytes big-endian || SHA-256(payload))``,
the leaves in the order of their sequences. The collector's ``deliver`` builds the tree
(``collector/binary/src/deliver/tree.rs``) and sends each batch with its audit path; ingest
checks the path against the credential's root. A credential therefore admits those exact
bytes under those identities and nothing else: no new data, no batch altered.

``tests/contract/test_delivery.py`` and the collector's unit tests hold both sides to the
same vectors.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Final

#: The metadata a delivered batch carries its audit path in: ``INDEX:HEX``, where HEX is
#: the path's hashes (32 bytes each, from the leaf up) written one after another.
PROOF_HEADER: Final = "tuneplane-delivery-proof"
#: A proof as the header carries it: an index of ASCII digits, a colon, hex.
PROOF = re.compile(r"([0-9]{1,8}):([0-9a-f]*)")
#: The most leaves a credential may cover (a spool's batches; 2^20 is 20 hashes a path).
MAX_LEAVES: Final = 1 << 20
#: A spool epoch as `tuneplane-collector deliver` prints it (a spool makes 16 hex digits).
EPOCH: Final = re.compile(r"[0-9A-Za-z_-]{1,64}")


class BadProof(Exception):
    """The proof is malformed, or the batch is not one the credential covers."""


def leaf(sequence: int, payload: bytes) -> bytes:
    body = hashlib.sha256(payload).digest()
    return hashlib.sha256(b"\x00" + sequence.to_bytes(8, "big") + body).digest()


def node(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def root(leaves: list[bytes]) -> bytes:
    """The tree's root over ``leaves`` (at least one)."""
    if not leaves:
        raise ValueError("a tree has at least one leaf")
    if len(leaves) == 1:
        return leaves[0]
    split = 1 << ((len(leaves) - 1).bit_length() - 1)
    return node(root(leaves[:split]), root(leaves[split:]))


@dataclass(frozen=True, slots=True)
class Proof:
    index: int
    path: tuple[bytes, ...]

    @classmethod
    def parse(cls, text: str) -> Proof:
        found = PROOF.fullmatch(text)
        if found is None or len(found[2]) % 2:
            raise BadProof(f"{PROOF_HEADER} must be INDEX:HEX (lowercase hex), got "
                           f"{text[:80]!r}")
        raw = bytes.fromhex(found[2])
        if len(raw) % 32 or len(raw) > 32 * MAX_LEAVES.bit_length():
            raise BadProof(f"{PROOF_HEADER}'s path is not a list of SHA-256 hashes")
        return cls(int(found[1]), tuple(raw[i:i + 32] for i in range(0, len(raw), 32)))

    def render(self) -> str:
        return f"{self.index}:{b''.join(self.path).hex()}"


def verify(proof: Proof, leaf_hash: bytes, size: int, expected: bytes) -> bool:
    """Whether ``leaf_hash`` is leaf ``proof.index`` of the tree of ``size`` leaves whose
    root is ``expected`` (RFC 9162 §2.1.3.2)."""
    if not 0 <= proof.index < size:
        return False
    fn, sn = proof.index, size - 1
    found = leaf_hash
    for sibling in proof.path:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            found = node(sibling, found)
            if not fn & 1:
                while fn and not fn & 1:
                    fn >>= 1
                    sn >>= 1
        else:
            found = node(found, sibling)
        fn >>= 1
        sn >>= 1
    return sn == 0 and found == expected


def audit_path(leaves: list[bytes], index: int) -> tuple[bytes, ...]:
    """Leaf ``index``'s path in the tree of ``leaves`` (RFC 9162 §2.1.3.1), from the leaf up."""
    if len(leaves) <= 1:
        return ()
    split = 1 << ((len(leaves) - 1).bit_length() - 1)
    if index < split:
        return (*audit_path(leaves[:split], index), root(leaves[split:]))
    return (*audit_path(leaves[split:], index - split), root(leaves[:split]))


def committed_tree(epoch: str, root_hex: str, batches: int) -> tuple[str, bytes]:
    """The spool epoch and tree root a credential is asked for (what ``deliver --json``
    prints), checked; a ValueError says which is wrong."""
    digits = root_hex.strip().lower()
    if len(digits) != 64 or any(c not in "0123456789abcdef" for c in digits):
        raise ValueError(f"the root is the 64 hex digits `tuneplane-collector deliver` printed, "
                         f"not {root_hex!r}")
    if not 1 <= batches <= MAX_LEAVES:
        raise ValueError(f"batches must be 1..{MAX_LEAVES}, got {batches}")
    if not EPOCH.fullmatch(epoch.strip()):
        raise ValueError("the spool epoch is the word `tuneplane-collector deliver` printed "
                         f"(1-64 letters, digits, '-' or '_'), not {epoch[:80]!r}")
    return epoch.strip(), bytes.fromhex(digits)
