"""What a node's call must show before control does any database work: a node token that
verifies, and a node under its call rate.

A token string is verified (HMAC, claims) once and remembered until it expires, so a
node's calls after its first cost a dictionary look-up, not a JWT decode; the database
still decides on every admitted call whether the node stands (revoked, re-enrolled).

The call rate is a token bucket per node: ``per_second`` calls on average, ``burst`` at
once. A healthy agent beats every few seconds and reports a handful of launches; a node
past its rate (a hostile or broken agent, a retry loop without backoff) is refused with
RESOURCE_EXHAUSTED before any database work, and the refusal is held until the node's
next call would be admitted (``hold``, at most ``MAX_HOLD``): a node retrying at once
waits instead of spinning, which would cost control (and the host's other services) the
TLS and HTTP/2 work of every refused call.
"""

from __future__ import annotations

from dataclasses import dataclass

import grpc

from tuneplane.common.tokens import TokenError, TokenKind, TokenSigner
from tuneplane.controlplane import nodes

#: Verified tokens remembered (one per node in use; the oldest forgotten first).
TOKENS_KEPT = 4096
#: Nodes whose buckets are kept before full ones are forgotten.
BUCKETS_KEPT = 4096
#: Nodes whose tokens from before their latest enrollment are refused before their call rate.
REPLACED_KEPT = 4096
#: The longest a refusal for the call rate is held before it is answered (seconds).
MAX_HOLD = 1.0


@dataclass(frozen=True, slots=True)
class NodeCaller:
    node_id: str
    issued_at: int
    expires_at: int


@dataclass(frozen=True, slots=True)
class Refused:
    code: grpc.StatusCode
    message: str
    hold: float = 0.0  # seconds to wait before answering (when the server has room)


@dataclass(frozen=True, slots=True)
class CallRate:
    """A node's calls: ``per_second`` on average, up to ``burst`` at once."""

    per_second: float
    burst: float

    def __post_init__(self) -> None:
        if self.per_second <= 0 or self.burst < 1:
            raise ValueError(f"a node call rate needs calls per second above 0 and a burst "
                             f"of 1 or more, not {self.per_second} and {self.burst}")


#: An agent beats every 5 s and reports each launch a few times: far below this.
DEFAULT_RATE = CallRate(5.0, 20.0)


class CallBuckets:
    """One token bucket per node; ``now`` (seconds, monotonic) is passed in."""

    def __init__(self, rate: CallRate) -> None:
        self.rate = rate
        self._buckets: dict[str, tuple[float, float]] = {}  # node → (calls left, as of)

    def take(self, node_id: str, now: float) -> float | None:
        """None when the node may call now (one call taken), else the seconds until it may."""
        left, since = self._buckets.get(node_id, (self.rate.burst, now))
        left = min(self.rate.burst, left + (now - since) * self.rate.per_second)
        if left < 1:
            self._buckets[node_id] = (left, now)
            return (1 - left) / self.rate.per_second
        if node_id not in self._buckets and len(self._buckets) >= BUCKETS_KEPT:
            self._forget_full(now)
        self._buckets[node_id] = (left - 1, now)
        return None

    def _forget_full(self, now: float) -> None:
        """Drop the buckets that have refilled: forgetting them changes no answer."""
        refill = self.rate.burst / self.rate.per_second
        self._buckets = {node: (left, since) for node, (left, since) in self._buckets.items()
                         if now - since < refill}


class NodeAdmission:
    def __init__(self, signer: TokenSigner, rate: CallRate | None) -> None:
        """``rate`` None: no call rate per node."""
        self._signer = signer
        self._verified: dict[str, NodeCaller] = {}
        self._replaced: dict[str, int] = {}  # node → its tokens issued before this are refused
        self.buckets = None if rate is None else CallBuckets(rate)

    def replaced_before(self, node_id: str, issued_at: int) -> None:
        """The database says the node's tokens issued before ``issued_at`` are refused for
        good (a later enrollment): they are refused from now on before the node's call rate,
        so a replaced credential cannot spend the rate of the node's new one."""
        if node_id not in self._replaced and len(self._replaced) >= REPLACED_KEPT:
            del self._replaced[next(iter(self._replaced))]
        self._replaced[node_id] = max(issued_at, self._replaced.get(node_id, issued_at))

    def caller(self, token: str, now: float) -> NodeCaller:
        """The node the token names; raises TokenError when it does not verify or expired."""
        known = self._verified.get(token)
        if known is None:
            claims = self._signer.verify(token, TokenKind.NODE, now=now)
            known = NodeCaller(str(claims["sub"]), int(claims["iat"]), int(claims["exp"]))
            if len(self._verified) >= TOKENS_KEPT:
                del self._verified[next(iter(self._verified))]
            self._verified[token] = known
        elif known.expires_at <= now:
            del self._verified[token]
            raise TokenError("token expired")
        return known

    def check(self, token: str | None, now: float, monotonic: float) -> NodeCaller | Refused:
        """The calling node, or why its call is refused (and with which code)."""
        if token is None:
            return Refused(grpc.StatusCode.UNAUTHENTICATED,
                           "missing node token: send 'authorization: Bearer <node token>'")
        try:
            caller = self.caller(token, now)
        except TokenError as exc:
            return Refused(grpc.StatusCode.UNAUTHENTICATED, f"node token refused: {exc}")
        if caller.issued_at < self._replaced.get(caller.node_id, caller.issued_at):
            return Refused(grpc.StatusCode.UNAUTHENTICATED, nodes.replaced(caller.node_id))
        if self.buckets is not None:
            wait = self.buckets.take(caller.node_id, monotonic)
            if wait is not None:
                rate = self.buckets.rate
                return Refused(grpc.StatusCode.RESOURCE_EXHAUSTED,
                               f"node {caller.node_id} is over its call rate ({rate.per_second:g}"
                               f" calls/s, bursts of {rate.burst:g}); retry with backoff",
                               hold=min(wait, MAX_HOLD))
        return caller
