"""Config entries (hyperparameters) as a source declares them: the rules the collector
applies to a JSONL config record (``{"config": {...}}``) and to the integration artifact's
static config (``collector/binary/src/sources/config.rs``, held to these by
``tests/collector/binary/test_config.py``), and the artifact's check by them.

A nested object's keys are joined to its own with "." (``{"optimizer": {"lr": 0.1}}``
declares ``optimizer.lr``, as W&B flattens a config). A value is a number (finite), a text
(at most ``MAX_CONFIG_TEXT_BYTES``, no NUL) or a flag; null declares nothing; a list is the
text of its compact JSON. A key is a name. A key declared twice keeps its last value in its
first place; a setting that breaks a rule is skipped, and said.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from tuneplane.telemetry.v1.limits import MAX_CONFIG_KEYS, MAX_CONFIG_TEXT_BYTES
from tuneplane.telemetry.v1.validation import name_problem

ConfigValue = float | str | bool


def compact(value: Any) -> str:
    """``value`` as the compact JSON a list's setting holds."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)


def problem(key: str, value: ConfigValue) -> str | None:
    """Why a setting cannot be sent (ingest's ``check_config`` would refuse its batch)."""
    if (found := name_problem(key)) is not None:
        return f"config key {found}"
    if isinstance(value, float) and not math.isfinite(value):
        return f"config {key!r} is {value!r}, not a finite number"
    if isinstance(value, str):
        if (size := len(value.encode())) > MAX_CONFIG_TEXT_BYTES:
            return (f"config {key!r} is a text of {size} bytes, over the "
                    f"{MAX_CONFIG_TEXT_BYTES} byte bound")
        if "\0" in value:
            return f"config {key!r} is a text holding a NUL character"
    return None


def _value(value: Any) -> ConfigValue:
    if isinstance(value, bool | str):
        return value
    if isinstance(value, int | float):
        try:
            return float(value)
        except OverflowError:  # an integer past every float
            return math.inf if value > 0 else -math.inf
    if isinstance(value, list):
        return compact(value)
    return str(value)  # YAML's dates and times: the text they are written as


def declare(members: Mapping[Any, Any]) -> tuple[dict[str, ConfigValue], list[str]]:
    """The settings the object ``members`` declares, in first-declared order, and why each
    one skipped was."""
    settings: dict[str, ConfigValue] = {}
    skipped: list[str] = []

    def walk(prefix: str | None, inner: Mapping[Any, Any]) -> None:
        for name, value in inner.items():
            key = str(name) if prefix is None else f"{prefix}.{name}"
            if value is None:
                continue
            if isinstance(value, Mapping):
                walk(key, value)
                continue
            setting = _value(value)
            if (why := problem(key, setting)) is not None:
                skipped.append(why)
            else:
                settings[key] = setting

    walk(None, members)
    return settings, skipped


def static_config(document: Mapping[str, Any]) -> dict[str, ConfigValue]:
    """The integration artifact's static config (``config``); ValueError saying why the
    artifact is refused when a setting breaks a rule or there are too many."""
    settings, skipped = declare(document.get("config") or {})
    if skipped:
        raise ValueError(skipped[0])
    if len(settings) > MAX_CONFIG_KEYS:
        raise ValueError(f"config declares {len(settings)} keys, over the {MAX_CONFIG_KEYS} "
                         "bound")
    return settings
