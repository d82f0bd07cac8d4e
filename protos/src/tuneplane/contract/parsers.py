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
