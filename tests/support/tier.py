"""Which tier of the suite runs: the full one (CI, `scripts/test`) or the fast one
(`scripts/test --fast`, TUNEPLANE_TEST_TIER=fast), where property tests draw a quarter of
their examples: the same tests, each case as strict, fewer random cases in the quick loop.
The full tier always draws them all."""

from __future__ import annotations

import os


def fast() -> bool:
    return os.environ.get("TUNEPLANE_TEST_TIER") == "fast"


def examples(full: int) -> int:
    """How many random examples a property test draws: ``full``, a quarter in the fast tier
    (at least 10)."""
    return max(full // 4, 10) if fast() else full
