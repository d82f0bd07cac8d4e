"""Parsers of setting values: each takes the stripped text and raises ValueError with a
reason that reads after the variable's name (``TUNEPLANE_X must be positive, got 0``)."""

from __future__ import annotations


def text(raw: str) -> str:
    return raw


def positive(raw: str) -> int:
    """A whole number above zero."""
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"must be a whole number, got {raw!r}") from None
    if value <= 0:
        raise ValueError(f"must be positive, got {value}")
    return value


def seconds(raw: str) -> float:
    """A time in seconds above zero (``2``, ``0.5``)."""
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"must be a number of seconds, got {raw!r}") from None
    if not value > 0 or value == float("inf"):
        raise ValueError(f"must be a positive number of seconds, got {raw}")
    return value


def rate(raw: str) -> float:
    """A rate per second, 0 or above (0: no limit)."""
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"must be a number per second, got {raw!r}") from None
    if not value >= 0 or value == float("inf"):
        raise ValueError(f"must be 0 (no limit) or a positive number per second, got {raw}")
    return value


def nice_increment(raw: str) -> int:
    """How much to lower a process's CPU priority: a whole number from 0 to 19."""
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"must be a whole number from 0 to 19, got {raw!r}") from None
    if not 0 <= value <= 19:
        raise ValueError(f"must be from 0 to 19, got {value}")
    return value


def port(raw: str) -> int:
    """A TCP port, 1 to 65535, or 0 for none (what it would serve stays off)."""
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"must be a port number (0: off), got {raw!r}") from None
    if not 0 <= value <= 65535:
        raise ValueError(f"must be from 0 (off) to 65535, got {value}")
    return value
