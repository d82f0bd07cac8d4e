"""Failed sign-ins, counted per user name and per client address over a window, so
passwords cannot be guessed at the rate the service can hash them: past the limit, a
sign-in is answered 429 at once, without checking the password (and without its CPU cost),
until the window's oldest failure ages out. Kept per replica, in memory; a successful
sign-in clears its user name's count.
"""

from __future__ import annotations

import time
from collections import OrderedDict, deque
from collections.abc import Callable
from typing import Final

WINDOW_SECONDS: Final = 300.0
PER_USER: Final = 10
PER_ADDRESS: Final = 50
#: Keys remembered at most (the least recently failed go first).
CAPACITY: Final = 100_000


class Throttle:
    def __init__(self, *, clock: Callable[[], float] = time.monotonic,
                 window: float = WINDOW_SECONDS) -> None:
        self._clock = clock
        self._window = window
        self._failures: OrderedDict[tuple[str, str], deque[float]] = OrderedDict()

    def _recent(self, key: tuple[str, str]) -> deque[float]:
        found = self._failures.get(key, deque())
        cutoff = self._clock() - self._window
        while found and found[0] <= cutoff:
            found.popleft()
        return found

    def wait(self, username: str, address: str) -> float:
        """Seconds until a sign-in of ``username`` from ``address`` is checked again; 0:
        now."""
        waits = [0.0]
        for key, limit in ((("user", username), PER_USER), (("address", address), PER_ADDRESS)):
            recent = self._recent(key)
            if len(recent) >= limit:
                waits.append(recent[0] + self._window - self._clock())
        return max(waits)

    def failed(self, username: str, address: str) -> None:
        for key in (("user", username), ("address", address)):
            recent = self._recent(key)
            recent.append(self._clock())
            self._failures[key] = recent
            self._failures.move_to_end(key)
        while len(self._failures) > CAPACITY:
            self._failures.popitem(last=False)

    def succeeded(self, username: str) -> None:
        self._failures.pop(("user", username), None)
