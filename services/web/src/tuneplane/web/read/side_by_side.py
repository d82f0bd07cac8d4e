"""Calls run side by side, a bounded number at once: a chart's series reads (each holds a
pooled connection) and a Media answer's object reads (each holds a worker thread)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

T = TypeVar("T")


async def side_by_side(calls: Sequence[Callable[[], Awaitable[T]]], at_most: int) -> list[T]:
    """Each call's result, in order, at most ``at_most`` under way at once; the first
    failure fails them all, the calls still waiting cancelled."""
    turns = asyncio.Semaphore(at_most)

    async def taking_turns(call: Callable[[], Awaitable[T]]) -> T:
        async with turns:
            return await call()

    tasks = [asyncio.ensure_future(taking_turns(call)) for call in calls]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:  # one failed: the calls waiting never start
        for task in tasks:
            task.cancel()
        raise
