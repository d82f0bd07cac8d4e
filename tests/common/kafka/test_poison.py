"""The dead-letter guard: a few poison batches pass to the DLQ, a flood stops the projector."""

from __future__ import annotations

import pytest

from tuneplane.common.kafka.poison import DeadLetterGuard, DeadLetterLimit


def test_up_to_the_limit_per_window_passes_then_it_stops() -> None:
    guard = DeadLetterGuard(limit=3, window=60.0)
    for now in (0.0, 1.0, 2.0):
        guard.admit(now)
    with pytest.raises(DeadLetterLimit, match="more than 3 dead letters in 60 s"):
        guard.admit(3.0)


def test_the_window_slides() -> None:
    guard = DeadLetterGuard(limit=2, window=10.0)
    guard.admit(0.0)
    guard.admit(5.0)
    guard.admit(10.5)  # the first has left the window
    with pytest.raises(DeadLetterLimit):
        guard.admit(11.0)
