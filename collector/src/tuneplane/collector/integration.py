"""The integration artifact as the collector reads it: which sources and rich channels
this member owns. Reading and checking the artifact is the contract's
(``tuneplane.telemetry.v1.integration``); each source and channel has exactly one owner
member, whose collector alone reads it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import fastjsonschema

from tuneplane.collector.channels import ChannelSpec
from tuneplane.collector.reader import SourceKind, SourceSpec
from tuneplane.telemetry.v1.integration import (
    IntegrationError,
    MetricMapping,
    check_document,
    load_document,
)

__all__ = ["Integration", "IntegrationError", "load", "parse"]


@dataclass(frozen=True, slots=True)
class Integration:
    sources: list[tuple[SourceSpec, str]]  # (source or rich channel, owner member)
    mappings: list[MetricMapping]

    def sources_of(self, member: str) -> list[SourceSpec]:
        """What ``member``'s collector reads: the sources and channels it owns, only those."""
        return [spec for spec, owner in self.sources if owner == member]


def parse(document: Any, origin: str) -> Integration:
    mappings = check_document(document, origin)
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
    return Integration(sources, mappings)


def load(path: Path) -> Integration:
    return parse(load_document(path), str(path))
