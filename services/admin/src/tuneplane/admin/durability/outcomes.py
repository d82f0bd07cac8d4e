"""The four things a part of a deployment can claim of a loss, worst first."""

from __future__ import annotations

import enum
from collections.abc import Iterable


class Outcome(enum.Enum):
    LOSES = "loses"  # something acknowledged can be lost
    UNKNOWN = "unknown"  # the store does not tell, or could not be read
    STOPS = "stops"  # nothing acknowledged is lost, but writes are refused
    SURVIVES = "survives"  # nothing acknowledged is lost and writes go on

    def sentence(self, loss: str) -> str:
        return {
            Outcome.SURVIVES: f"survives the loss of one {loss}",
            Outcome.STOPS: f"keeps what it acknowledged but stops taking writes when one "
                           f"{loss} is lost",
            Outcome.LOSES: f"does not survive the loss of one {loss}",
            Outcome.UNKNOWN: f"cannot tell whether it survives the loss of one {loss}",
        }[self]


def worst(outcomes: Iterable[Outcome]) -> Outcome:
    """The worst of ``outcomes`` (SURVIVES when there are none)."""
    found = set(outcomes)
    return next((o for o in Outcome if o in found), Outcome.SURVIVES)
