"""Facts looked up in the database, kept briefly per key.

Blocking semantics: ``get`` returns at once for a key checked within ``ttl`` seconds;
otherwise it waits for one lookup, shared by every call asking for that key meanwhile (a
burst of pushes costs one query). When the lookup fails (``LookupFailed``), the last known
value is served with its true age, or ``None`` when nothing was ever known; either way the
key is not looked up again for ``ttl`` seconds, so an outage costs one failed lookup per key
and period, not one per push. At most ``capacity`` keys are kept (least recently used go).
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class LookupFailed(Exception):
    """The source could not answer now (database unreachable, pool busy); retry later."""


@dataclass(frozen=True, slots=True)
class Known(Generic[V]):
    value: V
    age: float  # seconds since the value was read from the source
    read_at: float  # when it was read, on the cache's clock


@dataclass(frozen=True, slots=True)
class _Entry(Generic[V]):
    known: tuple[V] | None  # None: never read successfully
    read_at: float
    checked_at: float


class FactCache(Generic[K, V]):
    def __init__(self, fetch: Callable[[K], Awaitable[V]], *, ttl: float, capacity: int,
                 clock: Callable[[], float]) -> None:
        self._fetch = fetch
        self._ttl = ttl
        self._capacity = capacity
        self._clock = clock
        self._entries: OrderedDict[K, _Entry[V]] = OrderedDict()
        self._pending: dict[K, asyncio.Task[None]] = {}
        self.failures = 0  # lookups that failed, for logs and tests

    async def get(self, key: K) -> Known[V] | None:
        entry = self._entries.get(key)
        if entry is None or self._clock() - entry.checked_at >= self._ttl:
            await asyncio.shield(self._lookup(key))
            entry = self._entries.get(key)
        else:
            self._entries.move_to_end(key)
        if entry is None or entry.known is None:
            return None
        return Known(entry.known[0], self._clock() - entry.read_at, entry.read_at)

    def _lookup(self, key: K) -> asyncio.Task[None]:
        task = self._pending.get(key)
        if task is None:
            task = asyncio.get_running_loop().create_task(self._refresh(key))
            self._pending[key] = task
            task.add_done_callback(lambda _: self._pending.pop(key, None))
        return task

    async def _refresh(self, key: K) -> None:
        try:
            value = await self._fetch(key)
        except LookupFailed:
            self.failures += 1
            now = self._clock()
            before = self._entries.get(key)
            self._keep(key, _Entry(before.known, before.read_at, now) if before is not None
                       else _Entry(None, now, now))
            return
        now = self._clock()
        self._keep(key, _Entry((value,), now, now))

    def _keep(self, key: K, entry: _Entry[V]) -> None:
        self._entries[key] = entry
        self._entries.move_to_end(key)
        while len(self._entries) > self._capacity:
            self._entries.popitem(last=False)
