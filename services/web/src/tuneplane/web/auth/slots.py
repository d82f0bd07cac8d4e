"""A web replica's query slots: how many authenticated requests it answers at once, how
many wait, and how many of both one caller may hold.

A caller finding no slot free waits for one, up to ``wait`` seconds and behind at most
``queue`` others (a burst of callers is answered in turn, as fast as one at a time would
be); past either it is answered 503 with Retry-After, so overload is refused at once
instead of piling up.

One caller (a user, whichever of their tokens or sessions; a workload's run) runs at most
a quarter of the slots at once (``share``): its other requests wait their turn among its
own, not in the replica's queue, so it holds at most that many of the slots and waiting
places the others share. It has at most ``per_caller`` requests running or waiting in all,
past which it is answered 429. A caller flooding the replica, or one whose token has been
revoked and is refused only once it holds a slot, never takes every place from the others.
Waiting callers hold no connection and nothing but their coroutine.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from fastapi import HTTPException

RETRY = {"Retry-After": "1"}
#: The part of the slots one caller runs at once.
SHARE = 4


@dataclass(slots=True)
class Share:
    """One caller's requests on the replica: how many, and its turns at the slots."""

    turns: asyncio.Semaphore
    requests: int = field(default=0)


class QuerySlots:
    def __init__(self, size: int, *, queue: int, wait: float, per_caller: int) -> None:
        self._free = asyncio.Semaphore(size)
        self._queue = queue
        self._wait = wait
        self._waiting = 0
        self._per_caller = per_caller
        self._share = max(1, size // SHARE)
        self._shares: dict[str, Share] = {}

    @asynccontextmanager
    async def held_by(self, caller: str) -> AsyncIterator[None]:
        """A slot for ``caller``, within its share: its turn among its own requests (up to
        ``wait`` seconds), then the replica's slot; 429 past ``per_caller`` requests."""
        share = self._shares.get(caller)
        if share is None:
            share = self._shares[caller] = Share(asyncio.Semaphore(self._share))
        if share.requests >= self._per_caller:
            raise HTTPException(429, f"already {self._per_caller} queries of yours in flight "
                                     "or waiting on this replica; retry when one is answered",
                                headers=RETRY)
        share.requests += 1
        try:
            try:
                await self._acquire(share.turns)
            except TimeoutError:
                raise HTTPException(429, f"your queries on this replica took their share of "
                                         f"it for {self._wait:g} s; retry shortly",
                                    headers=RETRY) from None
            try:
                async with self:
                    yield
            finally:
                share.turns.release()
        finally:
            share.requests -= 1
            if not share.requests:
                del self._shares[caller]

    async def _acquire(self, semaphore: asyncio.Semaphore) -> None:
        """``semaphore`` within ``wait`` seconds (at once, or not at all, when it is 0);
        TimeoutError otherwise."""
        if self._wait <= 0:
            if semaphore.locked():
                raise TimeoutError
            await semaphore.acquire()
            return
        async with asyncio.timeout(self._wait):  # (no task of its own, as wait_for made)
            await semaphore.acquire()

    def requests_of(self, caller: str) -> int:
        """``caller``'s requests running or waiting now."""
        found = self._shares.get(caller)
        return 0 if found is None else found.requests

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
            await self._acquire(self._free)
        except TimeoutError:
            raise HTTPException(503, f"no query slot came free within {self._wait:g} s; "
                                     "retry shortly", headers=RETRY) from None
        finally:
            self._waiting -= 1

    async def __aexit__(self, *_: object) -> None:
        self._free.release()
