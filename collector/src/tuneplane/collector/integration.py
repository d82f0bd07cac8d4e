"""The integration artifact: a run's sources and owners, metric mapping and rich channels.

YAML (``.yaml``/``.yml``) or JSON, validated against ``schemas/integration-v1.json``
(fastjsonschema). Each source and channel has exactly one owner member, whose
collector alone reads it; a path declared twice is refused, so no file is read by two
readers. The mapping is carried as declared and frozen per attempt by the platform.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import fastjsonschema
import yaml

from tuneplane.collector.channels import ChannelSpec
from tuneplane.collector.reader import SourceKind, SourceSpec


class IntegrationError(ValueError):
    """The artifact is unreadable or breaks its schema; the message names file and place."""


@dataclass(frozen=True, slots=True)
class Mapping:
    tag: str
    name: str
    source: str | None = None
    goal: str | None = None
    unit: str | None = None
    aggregate_owner: str | None = None


@dataclass(frozen=True, slots=True)
class Integration:
    sources: list[tuple[SourceSpec, str]]  # (source or rich channel, owner member)
    mappings: list[Mapping]

    def sources_of(self, member: str) -> list[SourceSpec]:
        """What ``member``'s collector reads: the sources and channels it owns, only those."""
        return [spec for spec, owner in self.sources if owner == member]


_validate = fastjsonschema.compile(json.loads(
    (resources.files("tuneplane.collector") / "schemas" / "integration-v1.json").read_text()))


def parse(document: Any, origin: str) -> Integration:
    try:
        _validate(document)
    except fastjsonschema.JsonSchemaValueException as exc:
        raise IntegrationError(f"{origin}: {exc.message.replace('data', 'artifact', 1)}") from None
    sources = [(SourceSpec(s["id"], Path(s["path"]), SourceKind(s["kind"])), s["owner"])
               for s in document["sources"]]
    for i, c in enumerate(document.get("channels", [])):
        try:
            fastjsonschema.compile(c["schema"])
        except (fastjsonschema.JsonSchemaDefinitionException, ValueError, TypeError) as exc:
            raise IntegrationError(f"{origin}: channels[{i}].schema is not a usable JSON "
                                   f"Schema: {exc}") from None
        spec = ChannelSpec(c["id"], Path(c["path"]), c["schema"], c["max_record_bytes"],
                           c["max_bytes_per_minute"])
        sources.append((SourceSpec(c["id"], spec.path, SourceKind.CHANNEL, spec), c["owner"]))
    ids = [spec.source_id for spec, _ in sources]
    paths = [str(spec.path) for spec, _ in sources]
    for what, values in (("id", ids), ("path", paths)):
        repeated = sorted({v for v in values if values.count(v) > 1})
        if repeated:
            raise IntegrationError(f"{origin}: {what} {', '.join(repeated)} declared more than "
                                   "once; each source is read by exactly one reader")
    known = set(ids)
    mappings = [Mapping(**m) for m in document.get("mappings", [])]
    for i, m in enumerate(mappings):
        if m.source is not None and m.source not in known:
            raise IntegrationError(f"{origin}: mappings[{i}].source {m.source!r} is not a "
                                   "declared source")
    return Integration(sources, mappings)


def load(path: Path) -> Integration:
    try:
        text = path.read_text()
        document = (yaml.safe_load(text) if path.suffix in (".yaml", ".yml")
                    else json.loads(text))
    except (OSError, UnicodeDecodeError) as exc:
        raise IntegrationError(f"{path}: cannot read: {exc}") from None
    except (yaml.YAMLError, json.JSONDecodeError) as exc:
        raise IntegrationError(f"{path}: not valid {path.suffix.lstrip('.') or 'JSON'}: "
                               f"{exc}") from None
    return parse(document, str(path))
