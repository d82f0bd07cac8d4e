"""The collector's environment as the contract declares it (the settings table, what the node
agent and control set) is the environment the binary reads: the same names, none missing."""

from __future__ import annotations

import re
from pathlib import Path

from tuneplane.contract.collector import CollectorSettings
from tuneplane.contract.settings import describe

SOURCES = Path(__file__).resolve().parents[2] / "collector" / "binary" / "src"
#: Where the binary reads its settings: `run`'s settings and the Slurm node's.
READERS = ("settings.rs", "failpoints.rs", "slurm/mod.rs")


def read_by_the_binary() -> set[str]:
    """Every variable a reader module of the binary names (`"NAME"`, or NAME in its help)."""
    text = "\n".join((SOURCES / name).read_text() for name in READERS)
    return set(re.findall(r"\b((?:TUNEPLANE|SLURM)_[A-Z_]+[A-Z])\b", text))


def test_every_declared_setting_is_read_by_the_binary_and_none_is_undeclared() -> None:
    declared = {d.variable.name for d in describe(CollectorSettings)}
    assert len(declared) == 14
    assert read_by_the_binary() == declared
