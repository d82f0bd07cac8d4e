"""Service settings, parsed once from an environment mapping into a typed object."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass


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


@dataclass(frozen=True, slots=True)
class TopicSettings:
    """How the project creates its topics: 3/2 replication in production, 1/1 on one broker."""

    partitions: int
    replication: int
    min_insync: int

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> TopicSettings:
        env = environment(environ)
        replication = positive_int(env, "TUNEPLANE_TOPIC_REPLICATION", 1)
        return cls(
            partitions=positive_int(env, "TUNEPLANE_TOPIC_PARTITIONS", 12),
            replication=replication,
            min_insync=positive_int(env, "TUNEPLANE_TOPIC_MIN_INSYNC", min(2, replication)),
        )
