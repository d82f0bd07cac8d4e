"""A trim asks Kafka for each kept group's committed offsets again while Kafka says to (a
broker that has just started has no group coordinator yet), and gives up on what is not
passing."""

from __future__ import annotations

from typing import Any

import pytest
from aiokafka.errors import GroupAuthorizationFailedError, GroupCoordinatorNotAvailableError

from tuneplane.projector import trim


class Admin:
    def __init__(self, failures: list[Exception]) -> None:
        self.failures, self.asked = failures, 0

    async def list_consumer_group_offsets(self, group: str) -> dict[Any, Any]:
        self.asked += 1
        if self.failures:
            raise self.failures.pop(0)
        return {"committed": group}


async def test_a_group_coordinator_not_yet_elected_is_asked_again() -> None:
    admin = Admin([GroupCoordinatorNotAvailableError(), GroupCoordinatorNotAvailableError()])
    assert await trim.offsets_of(admin, "g") == {"committed": "g"}
    assert admin.asked == 3


async def test_a_failure_that_does_not_pass_is_raised_at_once() -> None:
    admin = Admin([GroupAuthorizationFailedError()])
    with pytest.raises(GroupAuthorizationFailedError):
        await trim.offsets_of(admin, "g")
    assert admin.asked == 1
