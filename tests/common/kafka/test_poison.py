"""The dead-letter guard: one run's poison never stops a consumer; poison from many runs at
once (a bad deploy) does, past the limit."""

from __future__ import annotations

import pytest

from tuneplane.common.kafka.message import Message
from tuneplane.common.kafka.poison import REMEMBERED, DeadLetterGuard, DeadLetterLimit, run_of


def test_many_runs_past_the_limit_stop() -> None:
    guard = DeadLetterGuard(limit=3, window=60.0, runs=2)
    for now, run in ((0.0, "a"), (1.0, "b"), (2.0, "a")):
        guard.admit(now, run)
    with pytest.raises(DeadLetterLimit, match="more than 3 dead letters in 60 s from 2 runs"):
        guard.admit(3.0, "b")


def test_one_run_never_stops_however_much_poison_it_sends() -> None:
    guard = DeadLetterGuard(limit=3, window=60.0, runs=2)
    for i in range(REMEMBERED + 10):
        guard.admit(i * 1e-4, "hostile")
    with pytest.raises(DeadLetterLimit):  # but a second run's poison meanwhile does
        guard.admit(11.0, "innocent")


def test_the_window_slides() -> None:
    guard = DeadLetterGuard(limit=2, window=10.0, runs=1)
    guard.admit(0.0, "a")
    guard.admit(5.0, "a")
    guard.admit(10.5, "a")  # the first has left the window
    with pytest.raises(DeadLetterLimit):
        guard.admit(11.0, "a")


def test_the_run_comes_from_the_record_key() -> None:
    assert run_of(Message(0, 1, b"run-7/1/rank-0/e-3", b"")) == "run-7"
    assert run_of(Message(0, 1, None, b"")) == "(no key)"
