"""Which launch holds which run-as user; launches beyond the pool wait their turn.

Each running launch has a run-as user of its own, so no launch's training code can read
another's working directory or signal its processes. A launch holds its user from before
its working directory is made until every process of it has exited (the runner ends them,
``processes.end_all``, before ``release``), and a user that still runs a process no launch
holds (left by an earlier life of the agent, or an operator's) is given to no launch.
Launches beyond the pool wait in the order they came, each for the first free user, or for
the one user that owns the working directory it names. Shared (``--share-run-as``), users
are not exclusive: a launch takes the least busy one at once, and launches running as one
user can reach each other.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Sequence

from tuneplane.collector.node import processes
from tuneplane.collector.node.runas import RunAs


class UserPool:
    """The run-as users of this node and who holds them; safe to use from any thread."""

    def __init__(self, users: Sequence[RunAs], *, shared: bool = False,
                 live_uids: Callable[[], set[int]] = processes.live_uids) -> None:
        if not users:
            raise ValueError("a pool of run-as users needs one user at least")
        self.users = tuple(users)
        self.shared = shared
        self._live_uids = live_uids
        self._holders: dict[int, RunAs] = {}        # launch id: the user it holds
        self._queue: dict[int, RunAs | None] = {}   # waiting launch id: the user it needs
        self._changed = threading.Condition()

    def exclusive(self, user: RunAs) -> bool:
        """Whether a launch holds ``user`` alone (what it leaves running is then ended)."""
        return not self.shared and not user.same_user

    def take(self, launch_id: int, wanted: RunAs | None = None) -> RunAs | None:
        """The launch's user, now held by it, if its turn has come and a user is free;
        otherwise None and the launch waits in line (``wait``, ``leave``)."""
        with self._changed:
            self._queue.setdefault(launch_id, wanted)
            if self.shared:
                user: RunAs | None = self._queue[launch_id] or self._least_busy()
            else:
                user = self._turns().get(launch_id)
            if user is not None:
                del self._queue[launch_id]
                self._holders[launch_id] = user
            return user

    def wait(self, launch_id: int, stopping: threading.Event, *,
             poll: float = 0.5) -> RunAs | None:
        """``take`` until it gives the launch a user, or None once ``stopping`` is set.
        Wakes when a user is released, and every ``poll`` s: a leftover process may exit."""
        with self._changed:
            while not stopping.is_set():
                user = self.take(launch_id)
                if user is not None:
                    return user
                self._changed.wait(poll)
        return None

    def leave(self, launch_id: int) -> None:
        """The launch waits no longer (the agent stops); those behind it move up."""
        with self._changed:
            if launch_id in self._queue:
                del self._queue[launch_id]
                self._changed.notify_all()

    def release(self, launch_id: int) -> None:
        """The launch holds its user no longer: nothing of it runs as the user now."""
        with self._changed:
            if self._holders.pop(launch_id, None) is not None:
                self._changed.notify_all()

    def _least_busy(self) -> RunAs:
        load = Counter(user.uid for user in self._holders.values())
        return min(self.users, key=lambda user: load[user.uid])  # ties: the pool's order

    def _free(self) -> tuple[list[RunAs], list[RunAs]]:
        """Users no launch holds: those free, and those still running a process (never
        the agent's own user, which runs the agent)."""
        held = {user.uid for user in self._holders.values()}
        idle = [user for user in self.users if user.uid not in held]
        live = self._live_uids() if any(not user.same_user for user in idle) else set()
        stray = [user for user in idle if user.uid in live and not user.same_user]
        return [user for user in idle if user not in stray], stray

    def _turns(self) -> dict[int, RunAs]:
        """Which waiting launch gets which free user now, in the order they came."""
        free, _ = self._free()
        given: dict[int, RunAs] = {}
        for launch_id, wanted in self._queue.items():
            user = next((u for u in free if wanted is None or u.uid == wanted.uid), None)
            if user is not None:
                free.remove(user)
                given[launch_id] = user
        return given

    def reason(self, launch_id: int) -> str:
        """Why the launch waits, in words for whoever lists the launches."""
        with self._changed:
            wanted = self._queue.get(launch_id)
            _, stray = self._free()
            strays = f" ({', '.join(u.name for u in stray)} still running processes of no " \
                "launch)" if stray else ""
            if wanted is not None:
                held = wanted.uid in {user.uid for user in self._holders.values()}
                why = "held by another launch" if held else "still running processes of no " \
                    "launch" if wanted in stray else "promised to a launch that came first"
                return f"waiting for run-as user {wanted.name}, the owner of its working " \
                       f"directory: {why}"
            count = len(self.users)
            busy = "the only one is busy" if count == 1 else f"all {count} are busy"
            ahead = list(self._queue).index(launch_id) if launch_id in self._queue else 0
            before = f"; {ahead} launch{'es' if ahead > 1 else ''} waiting before it" \
                if ahead else ""
            return f"waiting for a free run-as user: {busy}{strays}{before}"
