"""A web replica's query slots: how many authenticated requests it answers at once, how
many wait, and how many of both one caller may hold.

A caller finding no slot free waits for one, up to ``wait`` seconds and behind at most
``queue`` others (a burst of callers is answered in turn, as fast as one at a time would
be); past either it is answered 503 with Retry-After, so overload is refused at once
instead of piling up. One caller (a user, whichever of their tokens or sessions; a
workload's member) holds at most ``per_caller`` slots and waiting places together, past
which it is answered 429: a caller flooding the replica, or one whose token has been
revoked and is refused only once it holds a slot, never takes every place from the others.
Waiting callers hold no connection and nothing but their coroutine.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import HTTPException

RETRY = {"Retry-After": "1"}


class QuerySlots:
    def __init__(self, size: int, *, queue: int, wait: float, per_caller: int) -> None:
        self._free = asyncio.Semaphore(size)
        self._queue = queue
        self._wait = wait
        self._waiting = 0
        self._per_caller = per_caller
        self._held: collections.Counter[str] = collections.Counter()

    @asynccontextmanager
    async def held_by(self, caller: str) -> AsyncIterator[None]:
        """A slot for ``caller``, within its share (429 past it)."""
        if self._held[caller] >= self._per_caller:
            raise HTTPException(429, f"already {self._per_caller} queries of yours in flight "
                                     "or waiting on this replica; retry when one is answered",
                                headers=RETRY)
        self._held[caller] += 1
        try:
            async with self:
                yield
        finally:
            self._held[caller] -= 1
            if not self._held[caller]:
                del self._held[caller]

    def locked(self) -> bool:
        """Whether every slot is taken."""
        return self._free.locked()

    @property
    def waiting(self) -> int:
        """Callers waiting for a slot now."""
        return self._waiting

    async def __aenter__(self) -> None:
        if not self._free.locked():
            await self._free.acquire()
            return
        if self._waiting >= self._queue or self._wait <= 0:
            raise HTTPException(503, "too many queries in flight; retry shortly",
                                headers=RETRY)
        self._waiting += 1
        try:
            await asyncio.wait_for(self._free.acquire(), self._wait)
        except TimeoutError:
            raise HTTPException(503, f"no query slot came free within {self._wait:g} s; "
                                     "retry shortly", headers=RETRY) from None
        finally:
            self._waiting -= 1

    async def __aexit__(self, *_: object) -> None:
        self._free.release()
