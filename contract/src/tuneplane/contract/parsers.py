"""Parsers of setting values: each takes the stripped text and raises ValueError with a
reason that reads after the variable's name (``TUNEPLANE_X must be positive, got 0``)."""

from __future__ import annotations


def text(raw: str) -> str:
    return raw


def _whole(raw: str, *, zero: str | None) -> int:
    """A whole number above zero, or 0 too where ``zero`` says what 0 means."""
    allowed = ", 0 or above" if zero else ""
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"must be a whole number{allowed}, got {raw!r}") from None
    if value < 0 or (value == 0 and not zero):
        raise ValueError(f"must be 0 or above ({zero}), got {value}" if zero
                         else f"must be positive, got {value}")
    return value


def positive(raw: str) -> int:
    """A whole number above zero."""
    return _whole(raw, zero=None)


def whole_or_zero(raw: str) -> int:
    """A whole number, 0 or above (0: none)."""
    return _whole(raw, zero="0: none")


def _finite(raw: str, unit: str, *, zero: str | None) -> float:
    """A finite number of ``unit`` above zero, or 0 too where ``zero`` says what 0 means."""
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"must be a number {unit}, got {raw!r}") from None
    if value == float("inf") or not (value >= 0 if zero else value > 0):
        allowed = f"0 ({zero}) or a positive number" if zero else "a positive number"
        raise ValueError(f"must be {allowed} {unit}, got {raw}")
    return value


def seconds(raw: str) -> float:
    """A time in seconds above zero (``2``, ``0.5``)."""
    return _finite(raw, "of seconds", zero=None)


def seconds_or_zero(raw: str) -> float:
    """A time in seconds, 0 or above (0: none)."""
    return _finite(raw, "of seconds", zero="none")


def rate(raw: str) -> float:
    """A rate per second, 0 or above (0: no limit)."""
    return _finite(raw, "per second", zero="no limit")


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
