"""Batch identities this process recently made durable, to answer resends cheaply."""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from enum import Enum

from tuneplane.telemetry.v1.identity import BatchKey


class Seen(Enum):
    NEW = "new"
    SAME = "same"            # same identity, same bytes: a resend after a lost ACK
    CONFLICT = "conflict"    # same identity, other bytes: never accepted


class RecentBatches:
    """A bounded LRU of batch identity → content digest."""

    def __init__(self, capacity: int = 100_000) -> None:
        self._capacity = capacity
        self._digests: OrderedDict[BatchKey, bytes] = OrderedDict()

    @staticmethod
    def digest(payload: bytes) -> bytes:
        return hashlib.blake2b(payload, digest_size=16).digest()

    def check(self, key: BatchKey, digest: bytes) -> Seen:
        known = self._digests.get(key)
        if known is None:
            return Seen.NEW
        self._digests.move_to_end(key)
        return Seen.SAME if known == digest else Seen.CONFLICT

    def remember(self, key: BatchKey, digest: bytes) -> None:
        self._digests[key] = digest
        self._digests.move_to_end(key)
        while len(self._digests) > self._capacity:
            self._digests.popitem(last=False)
