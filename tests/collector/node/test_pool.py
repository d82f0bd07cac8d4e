"""Each running launch holds a run-as user of its own; launches beyond the pool wait in
the order they came, and a user still running processes is given to no launch."""

from __future__ import annotations

import threading

import pytest

from tuneplane.collector.node.pool import UserPool
from tuneplane.collector.node.runas import RunAs


def user(name: str, uid: int, *, same_user: bool = False) -> RunAs:
    return RunAs(name, uid, uid, (uid,), "/nonexistent", same_user)


ALICE, BOB, CAROL = user("alice", 1001), user("bob", 1002), user("carol", 1003)


class Processes:
    """Stands in for /proc: the users that run a process now."""

    def __init__(self) -> None:
        self.running: set[int] = set()

    def __call__(self) -> set[int]:
        return set(self.running)


def pool(*users: RunAs, shared: bool = False) -> tuple[UserPool, Processes]:
    live = Processes()
    return UserPool(users, shared=shared, live_uids=live), live


def test_each_launch_gets_a_user_of_its_own_and_the_next_waits_until_one_is_released() -> None:
    users, _ = pool(ALICE, BOB)
    assert users.take(1) is ALICE
    assert users.take(2) is BOB
    assert users.take(3) is None
    assert users.reason(3) == "waiting for a free run-as user: all 2 are busy"
    assert users.take(3) is None  # asking again changes nothing
    users.release(1)
    assert users.take(3) is ALICE
    users.release(2)
    users.release(3)
    assert users.take(4) is ALICE  # the pool's order when several are free


def test_waiting_launches_are_served_in_the_order_they_came() -> None:
    users, _ = pool(ALICE)
    assert users.take(1) is ALICE
    assert users.take(2) is None
    assert users.take(3) is None
    assert users.reason(3) == ("waiting for a free run-as user: the only one is busy; "
                               "1 launch waiting before it")
    users.release(1)
    assert users.take(3) is None  # launch 2 came first: the user is promised to it
    assert users.take(2) is ALICE
    users.release(2)
    assert users.take(3) is ALICE


def test_a_launch_that_stops_waiting_leaves_its_turn_to_the_next() -> None:
    users, _ = pool(ALICE)
    users.take(1)
    assert users.take(2) is None
    assert users.take(3) is None
    users.leave(2)
    users.release(1)
    assert users.take(3) is ALICE


def test_a_launch_naming_a_working_directory_waits_for_its_owner_alone() -> None:
    users, _ = pool(ALICE, BOB)
    assert users.take(1) is ALICE
    assert users.take(2, wanted=ALICE) is None  # bob is free, but not the owner
    assert users.reason(2) == ("waiting for run-as user alice, the owner of its working "
                               "directory: held by another launch")
    assert users.take(3) is BOB  # no one waiting for bob: a later launch takes it
    users.release(1)
    assert users.take(2) is ALICE


def test_a_user_still_running_processes_of_no_launch_is_given_to_none() -> None:
    users, live = pool(ALICE, BOB)
    live.running = {ALICE.uid}  # left by an earlier life of the agent, or an operator's
    assert users.take(1) is BOB
    assert users.take(2) is None
    assert users.reason(2) == ("waiting for a free run-as user: all 2 are busy (alice still "
                               "running processes of no launch)")
    assert users.take(3, wanted=ALICE) is None
    assert users.reason(3).endswith("alice, the owner of its working directory: still "
                                    "running processes of no launch")
    live.running = set()
    assert users.take(2) is ALICE


def test_the_agents_own_user_runs_the_agent_and_is_still_free() -> None:
    me = user("agent", 0, same_user=True)
    users, live = pool(me)
    live.running = {0}
    assert users.take(1) is me
    assert not users.exclusive(me)  # nothing of it is killed at the end
    assert users.take(2) is None    # but launches still take turns on it


def test_shared_users_never_make_a_launch_wait_and_spread_by_load() -> None:
    users, live = pool(ALICE, BOB, shared=True)
    live.running = {ALICE.uid, BOB.uid}
    assert [users.take(i) for i in range(1, 6)] == [ALICE, BOB, ALICE, BOB, ALICE]
    assert users.take(6, wanted=BOB) is BOB
    assert not users.exclusive(ALICE)
    users.release(2)
    users.release(4)
    users.release(6)
    assert users.take(7) is BOB


def test_wait_returns_the_user_released_by_another_thread() -> None:
    users, _ = pool(ALICE)
    users.take(1)
    assert users.take(2) is None
    got: list[RunAs | None] = []
    waiter = threading.Thread(target=lambda: got.append(users.wait(2, threading.Event(),
                                                                   poll=30.0)))
    waiter.start()
    users.release(1)  # wakes it at once, long before its poll
    waiter.join(timeout=10)
    assert got == [ALICE]


def test_wait_gives_up_when_the_agent_stops() -> None:
    users, _ = pool(ALICE, BOB, CAROL)
    for launch_id in (1, 2, 3):
        users.take(launch_id)
    stopping = threading.Event()
    stopping.set()
    assert users.wait(4, stopping) is None


def test_a_pool_needs_a_user() -> None:
    with pytest.raises(ValueError, match="needs one user at least"):
        UserPool([])
