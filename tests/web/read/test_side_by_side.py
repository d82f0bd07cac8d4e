"""Calls side by side (``side_by_side``), as a chart's series are read: in order, never
more at once than asked, so the pool keeps connections for other requests."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from tuneplane.web.read.side_by_side import side_by_side


async def test_a_hundred_reads_take_turns_at_most_four_at_once_and_answer_in_order() -> None:
    under_way, most = 0, 0

    def read(i: int) -> Callable[[], Awaitable[int]]:
        async def call() -> int:
            nonlocal under_way, most
            under_way += 1
            most = max(most, under_way)
            await asyncio.sleep(0.001 * (i % 7))  # ending out of order
            under_way -= 1
            return i
        return call

    assert await side_by_side([read(i) for i in range(100)], 4) == list(range(100))
    assert most == 4


async def test_a_read_that_fails_fails_the_chart_and_the_reads_waiting_never_start() -> None:
    started: list[int] = []

    def read(i: int) -> Callable[[], Awaitable[int]]:
        async def call() -> int:
            started.append(i)
            if i == 2:
                raise ValueError("a damaged chunk")
            await asyncio.sleep(0)
            return i
        return call

    with pytest.raises(ValueError, match="a damaged chunk"):
        await side_by_side([read(i) for i in range(100)], 2)
    for _ in range(20):  # were any still waiting for a turn, they would start by now
        await asyncio.sleep(0)
    assert started[:3] == [0, 1, 2]
    assert len(started) <= 5, started  # those given a turn before the failure was seen
