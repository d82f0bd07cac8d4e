"""The integration artifact contract: reading and checking it, shared by the collector
(which reads its sources) and the services (which freeze its metric mapping).

YAML (``.yaml``/``.yml``) or JSON, validated against ``integration-v1.json``
(fastjsonschema), then the rules a schema cannot say: ids and paths declared once,
mappings naming declared sources (and a run path only of a TensorBoard source), one mapping
per (source, run path, tag), a static config whose every setting can be sent (``config``).
The artifact is data, not
instructions: owners and ids are names (they become path components), and a channel
schema's ``$ref`` must stay inside the schema (``channelschema``): nothing is fetched.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import fastjsonschema
import yaml

from tuneplane.telemetry.v1.channelschema import SchemaRefused, check_schema
from tuneplane.telemetry.v1.config import static_config
from tuneplane.telemetry.v1.names import NAME_PATTERN, NAME_RULE, is_name
from tuneplane.telemetry.v1.validation import run_path_problem

_validate = fastjsonschema.compile(json.loads(
    (resources.files("tuneplane.telemetry.v1") / "integration-v1.json").read_text()))


#: How a scheduler's task of rank N names its member unless the artifact says otherwise
#: (``members.rank``).
RANK_MEMBER = "rank-{rank}"


def rank_member(document: dict[str, Any]) -> str:
    """The artifact's template of a rank's member name (``{rank}`` stands for the rank)."""
    return str(document.get("members", {}).get("rank", RANK_MEMBER))


class IntegrationError(ValueError):
    """The artifact is unreadable or breaks its contract; the message names file and place."""


@dataclass(frozen=True, slots=True)
class MetricMapping:
    """tag (of ``source``, or of any source; of the TensorBoard run ``run_path``, or of
    every run) → canonical ``name`` and its semantics."""

    tag: str
    name: str
    source: str | None = None
    run_path: str | None = None
    goal: str | None = None
    unit: str | None = None
    aggregate_owner: str | None = None


def load_document(path: Path) -> Any:
    try:
        text = path.read_text()
        return yaml.safe_load(text) if path.suffix in (".yaml", ".yml") else json.loads(text)
    except (OSError, UnicodeDecodeError) as exc:
        raise IntegrationError(f"{path}: cannot read: {exc}") from None
    except (yaml.YAMLError, json.JSONDecodeError) as exc:
        raise IntegrationError(f"{path}: not valid {path.suffix.lstrip('.') or 'JSON'}: "
                               f"{exc}") from None


def _schema_error(exc: fastjsonschema.JsonSchemaValueException) -> str:
    place = (exc.name or "data").replace("data", "artifact", 1)
    if exc.rule == "pattern" and exc.rule_definition == NAME_PATTERN:
        return f"{place} {exc.value!r} is not a name: {NAME_RULE}"
    return exc.message.replace("data", "artifact", 1)


def check_names_and_paths(document: dict[str, Any], origin: str) -> None:
    """What the schema cannot say about each source and channel (NUL-free paths, local refs)
    and about the members' names."""
    if not is_name(rank_member(document).replace("{rank}", "0")):
        raise IntegrationError(f"{origin}: members.rank {rank_member(document)!r} does not make "
                               f"names: {NAME_RULE}")
    for group in ("sources", "channels"):
        for i, entry in enumerate(document.get(group, [])):
            for what in ("id", "owner"):
                if not is_name(entry[what]):  # the schema's pattern, restated: it is a path
                    raise IntegrationError(f"{origin}: {group}[{i}].{what} {entry[what]!r} is "
                                           f"not a name: {NAME_RULE}")
            if "\0" in entry["path"]:
                raise IntegrationError(f"{origin}: {group}[{i}].path holds a NUL character")
            if group == "channels":
                try:
                    check_schema(entry["schema"], f"{group}[{i}].schema")
                except SchemaRefused as exc:
                    raise IntegrationError(f"{origin}: {exc}") from None


def check_document(document: Any, origin: str) -> list[MetricMapping]:
    """Validate the whole artifact; returns its metric mapping."""
    try:
        _validate(document)
    except fastjsonschema.JsonSchemaValueException as exc:
        raise IntegrationError(f"{origin}: {_schema_error(exc)}") from None
    check_names_and_paths(document, origin)
    try:
        static_config(document)
    except ValueError as exc:
        raise IntegrationError(f"{origin}: {exc}") from None
    declared = [*document["sources"], *document.get("channels", [])]
    for what in ("id", "path"):
        values = [str(entry[what]) for entry in declared]
        repeated = sorted({v for v in values if values.count(v) > 1})
        if repeated:
            raise IntegrationError(f"{origin}: {what} {', '.join(repeated)} declared more than "
                                   "once; each source is read by exactly one reader")
    known = {entry["id"]: entry.get("kind", "channel") for entry in declared}
    mappings = [MetricMapping(**m) for m in document.get("mappings", [])]
    seen: set[tuple[str | None, str | None, str]] = set()
    for i, m in enumerate(mappings):
        if m.source is not None and m.source not in known:
            raise IntegrationError(f"{origin}: mappings[{i}].source {m.source!r} is not a "
                                   "declared source")
        if m.run_path is not None:
            check_mapped_run_path(m.run_path, m.source, known,
                                  f"{origin}: mappings[{i}].run_path")
        if (m.source, m.run_path, m.tag) in seen:
            run = "" if m.run_path is None else f" run {m.run_path!r}"
            raise IntegrationError(f"{origin}: mappings[{i}] maps tag {m.tag!r} of "
                                   f"{m.source or 'any source'}{run} a second time")
        seen.add((m.source, m.run_path, m.tag))
    return mappings


def check_mapped_run_path(run_path: str, source: str | None, kinds: dict[str, str],
                          where: str) -> None:
    """A mapped run path is one a series can have: a run path, of a TensorBoard source
    (``kinds``: each declared source's kind)."""
    if (problem := run_path_problem(run_path)) is not None:
        raise IntegrationError(f"{where} {problem}")
    if run_path and source is not None and kinds[source] != "tensorboard":
        raise IntegrationError(f"{where} {run_path!r}: source {source!r} is {kinds[source]}, "
                               "and only TensorBoard sources have runs")
