"""Settings primitives: every deployable parses its environment once, through these, into a
typed object whose errors name the setting."""

from __future__ import annotations

import os
from collections.abc import Mapping


class SettingsError(ValueError):
    """A required setting is missing or malformed; the message names it."""


def require(environ: Mapping[str, str], name: str) -> str:
    value = environ.get(name, "").strip()
    if not value:
        raise SettingsError(f"{name} is not set; `scripts/services env` prints local values")
    return value


def positive_int(environ: Mapping[str, str], name: str, default: int) -> int:
    raw = environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise SettingsError(f"{name} must be a whole number, got {raw!r}") from None
    if value <= 0:
        raise SettingsError(f"{name} must be positive, got {value}")
    return value


def environment(environ: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if environ is None else environ
