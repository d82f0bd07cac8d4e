"""What a part of a deployment can claim of a loss: one of four outcomes (worst first), with
its reason; and the claims of a whole deployment, which ``--require multi-machine`` reads."""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass


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


MACHINE, BROKER = "machine", "broker"


@dataclass(frozen=True, slots=True)
class Claim:
    part: str
    loss: str  # MACHINE or BROKER
    outcome: Outcome
    reason: str
    assumed: bool = False  # --assume: survival taken on the operator's word

    @property
    def survives(self) -> bool:
        return self.outcome is Outcome.SURVIVES or self.assumed

    def sentence(self) -> str:
        told = self.outcome.sentence(self.loss)
        return f"{told} (assumed by the operator)" if self.assumed else told


@dataclass(frozen=True, slots=True)
class Assessment:
    claims: tuple[Claim, ...]

    def failing(self) -> list[Claim]:
        """The machine claims that do not meet ``--require multi-machine``."""
        return [c for c in self.claims if c.loss == MACHINE and not c.survives]

    @property
    def multi_machine(self) -> bool:
        return not self.failing()
