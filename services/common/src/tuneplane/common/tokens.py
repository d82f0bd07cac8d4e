"""Token kinds (workload, delivery, node, Slurm ticket and job, user, session, sign-in): JWTs
(PyJWT) each signed with its own key.

Each kind's HMAC key is derived from ``TUNEPLANE_WEB_JWT_SECRET`` with HKDF-SHA256 and
the kind as context, so a token of one kind never verifies as another, and each
listener names the kind and audience it accepts.

A workload token issued by Node control also names the node it was issued through (the
``node`` claim), so revoking that node ends it; one issued by ``tuneplane-admin token``
names none.

A delivery token is deliver-only: it names one member's spool (its epoch) and the root of
the Merkle tree of the batches that spool held sealed (``tuneplane.telemetry.v1.delivery``),
so it admits those batches, byte for byte, and nothing else, even after the attempt ended.
"""

from __future__ import annotations

import enum
import functools
from dataclasses import dataclass
from typing import Any

import jwt
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from tuneplane.telemetry.v1.identity import MemberKey

ALGORITHM = "HS256"
#: Tokens whose signature was checked, kept with their claims (the least recently used go
#: first): a caller's every request carries the same token, and its HMAC and JSON cost more
#: than the rest of a kept chart answer's check. Only tokens that verified are kept, of
#: the kinds presented again and again (never a sign-in token, which anyone is given, nor a
#: Slurm ticket, redeemed once), and none longer than ``KEPT_LENGTH``: what is kept is
#: bounded whatever callers send.
VERIFIED_KEPT = 4096
KEPT_LENGTH = 2048


class TokenKind(enum.StrEnum):
    WORKLOAD = "workload"
    #: Late delivery of one spool's sealed batches, and nothing else.
    DELIVERY = "delivery"
    NODE = "node"
    USER = "user"
    SESSION = "session"
    SIGN_IN = "sign-in"  # a browser's sign-in at the identity provider, in progress
    #: What a Slurm job script holds: redeemed once per node and start of the job, by the
    #: node's collector, for a SLURM_JOB credential.
    SLURM_TICKET = "slurm-ticket"
    #: A job's collector on one node: workload tokens for that node's members only.
    SLURM_JOB = "slurm-job"

    @property
    def presented_again(self) -> bool:
        """Whether its holder shows it at call after call (what ``TokenSigner`` keeps)."""
        return self not in (TokenKind.SIGN_IN, TokenKind.SLURM_TICKET)

    @property
    def audience(self) -> str:
        return {
            TokenKind.WORKLOAD: "tuneplane-telemetry",
            TokenKind.DELIVERY: "tuneplane-telemetry-delivery",
            TokenKind.NODE: "tuneplane-node-control",
            TokenKind.USER: "tuneplane-web",
            TokenKind.SESSION: "tuneplane-web-session",
            TokenKind.SIGN_IN: "tuneplane-web-sign-in",
            TokenKind.SLURM_TICKET: "tuneplane-slurm-ticket",
            TokenKind.SLURM_JOB: "tuneplane-slurm-job",
        }[self]


class TokenError(Exception):
    """The token is missing, malformed, expired, of another kind or for another audience."""


def kind_of(token: str) -> str | None:
    """The kind a token says it is, unverified: which key to verify it with, nothing more."""
    try:
        kind = jwt.decode(token, options={"verify_signature": False}).get("kind")
    except jwt.PyJWTError:
        return None
    return kind if isinstance(kind, str) else None


def derive_key(secret: str, kind: TokenKind) -> bytes:
    hkdf = HKDF(algorithm=hashes.SHA256(), length=32, salt=b"tuneplane-token-v1",
                info=f"token-kind:{kind.value}".encode())
    return hkdf.derive(secret.encode())


@dataclass(frozen=True, slots=True)
class WorkloadClaims:
    member: MemberKey
    expires_at: int
    issued_at: int
    #: The node the token was issued through (Node control); None for one an admin issued.
    node: str | None = None


#: The longest a delivery token lives (it stands after its attempt's end, so a leaked one is
#: bounded by this, not by the attempt).
MAX_DELIVERY_SECONDS = 7 * 86400


@dataclass(frozen=True, slots=True)
class DeliveryClaims:
    member: MemberKey
    #: The spool epoch whose batches it covers.
    epoch: str
    #: The Merkle root of those batches, and how many leaves the tree has.
    root: bytes
    batches: int
    expires_at: int
    issued_at: int = 0
    #: The node it was issued through (by Node control, for a launch's spool): revoking or
    #: re-enrolling the node ends it at ingest. None: issued by an admin.
    node: str | None = None
    #: The Slurm job node whose drain left the spool (``launch/restart/node``), when issued
    #: to that node's collector: its report of the member is what the credential amends.
    job: str | None = None


class TokenSigner:
    """Issues and verifies tokens; ``now`` is always passed in, never read here."""

    def __init__(self, secret: str) -> None:
        if len(secret) < 16:
            raise ValueError("TUNEPLANE_WEB_JWT_SECRET must be at least 16 characters")
        self._keys = {kind: derive_key(secret, kind) for kind in TokenKind}
        self._verified = functools.lru_cache(maxsize=VERIFIED_KEPT)(self._signed)

    def issue(self, kind: TokenKind, subject: str, claims: dict[str, Any], *, now: float,
              ttl_seconds: int) -> str:
        """A signed ``kind`` token; ``claims`` flat (strings and numbers: ``verify`` gives
        each caller a copy of the kept claims, not of what they hold)."""
        payload = {**claims, "kind": kind.value, "aud": kind.audience, "sub": subject,
                   "iat": int(now), "exp": int(now) + ttl_seconds}
        return jwt.encode(payload, self._keys[kind], algorithm=ALGORITHM)

    def verify(self, token: str, kind: TokenKind, *, now: float) -> dict[str, Any]:
        """The claims of ``token`` when it is a valid ``kind`` token unexpired at ``now``.
        Its signature is checked once (``VERIFIED_KEPT``); its expiry at every call."""
        kept = kind.presented_again and len(token) <= KEPT_LENGTH
        claims = dict(self._verified(token, kind) if kept else self._signed(token, kind))
        if claims["exp"] <= now:
            raise TokenError("token expired")
        return claims

    def _signed(self, token: str, kind: TokenKind) -> dict[str, Any]:
        """The claims of ``token`` once its signature, audience and kind are checked (what
        stays true of it: PyJWT's own checks of ``iat`` and ``nbf`` only pass later)."""
        try:
            header = jwt.get_unverified_header(token)
            if header.get("alg") != ALGORITHM:
                raise TokenError(f"unsupported token algorithm {header.get('alg')!r}")
            claims: dict[str, Any] = jwt.decode(
                token, self._keys[kind], algorithms=[ALGORITHM], audience=kind.audience,
                options={"verify_exp": False, "require": ["exp", "kind", "aud", "sub"]},
            )
        except jwt.InvalidAudienceError:
            raise TokenError(f"token is not for {kind.audience}") from None
        except jwt.InvalidSignatureError:
            raise TokenError(f"token is not a valid {kind.value} token") from None
        except jwt.PyJWTError as exc:
            raise TokenError(f"malformed token: {exc}") from None
        if claims["kind"] != kind.value:
            raise TokenError(f"token kind {claims['kind']!r} is not accepted here")
        return claims

    def issue_workload(self, member: MemberKey, *, now: float, ttl_seconds: int,
                       node: str | None = None) -> str:
        binding: dict[str, Any] = {"run": member.run_id, "attempt": member.attempt,
                                   "member": member.member}
        if node is not None:
            binding["node"] = node
        return self.issue(TokenKind.WORKLOAD, str(member), binding, now=now,
                          ttl_seconds=ttl_seconds)

    def verify_workload(self, token: str, *, now: float) -> WorkloadClaims:
        claims = self.verify(token, TokenKind.WORKLOAD, now=now)
        try:
            member = MemberKey(str(claims["run"]), int(claims["attempt"]), str(claims["member"]))
            issued_at = int(claims["iat"])
        except (KeyError, TypeError, ValueError):
            raise TokenError("workload token lacks its run/attempt/member binding or its "
                             "issue time") from None
        node = claims.get("node")
        if node is not None and (not isinstance(node, str) or not node):
            raise TokenError(f"workload token names a malformed node {node!r}")
        return WorkloadClaims(member, int(claims["exp"]), issued_at, node)

    def issue_delivery(self, member: MemberKey, epoch: str, root: bytes, batches: int, *,
                       now: float, ttl_seconds: int, node: str | None = None,
                       job: str | None = None) -> str:
        if not 0 < ttl_seconds <= MAX_DELIVERY_SECONDS:
            raise ValueError(f"a delivery token lives 1..{MAX_DELIVERY_SECONDS} s (7 days), "
                             f"not {ttl_seconds}")
        binding: dict[str, Any] = {"run": member.run_id, "attempt": member.attempt,
                                   "member": member.member, "epoch": epoch, "root": root.hex(),
                                   "batches": batches}
        if node is not None:
            binding["node"] = node
        if job is not None:
            binding["job"] = job
        return self.issue(TokenKind.DELIVERY, str(member), binding, now=now,
                          ttl_seconds=ttl_seconds)

    def verify_delivery(self, token: str, *, now: float) -> DeliveryClaims:
        claims = self.verify(token, TokenKind.DELIVERY, now=now)
        try:
            member = MemberKey(str(claims["run"]), int(claims["attempt"]), str(claims["member"]))
            root = bytes.fromhex(str(claims["root"]))
            found = DeliveryClaims(member, str(claims["epoch"]), root, int(claims["batches"]),
                                   int(claims["exp"]), int(claims["iat"]), claims.get("node"),
                                   claims.get("job"))
            lifetime = found.expires_at - found.issued_at
        except (KeyError, TypeError, ValueError):
            raise TokenError("delivery token lacks its run/attempt/member, spool epoch or "
                             "batches") from None
        if len(root) != 32 or found.batches < 1 or not found.epoch:
            raise TokenError("delivery token names no spool epoch or no tree of batches")
        if lifetime > MAX_DELIVERY_SECONDS:
            raise TokenError(f"delivery token lives longer than {MAX_DELIVERY_SECONDS} s")
        if found.node is not None and (not isinstance(found.node, str) or not found.node):
            raise TokenError(f"delivery token names a malformed node {found.node!r}")
        if found.job is not None and (not isinstance(found.job, str) or not found.job):
            raise TokenError(f"delivery token names a malformed Slurm job node {found.job!r}")
        return found
