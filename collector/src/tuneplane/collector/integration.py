"""The integration artifact as the collector reads it: which sources and rich channels
this member owns. Reading and checking the artifact is the contract's
(``tuneplane.telemetry.v1.integration``); each source and channel has exactly one owner
member, whose collector alone reads it. A relative source path is the training command's:
it is read below the launch's working directory.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tuneplane.collector.channels import ChannelSpec
from tuneplane.collector.reader import SourceKind, SourceSpec
from tuneplane.telemetry.v1.channelschema import SchemaRefused, compile_offline
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

    def sources_of(self, member: str, workdir: Path | None = None) -> list[SourceSpec]:
        """What ``member``'s collector reads: the sources and channels it owns, only those;
        relative paths below ``workdir`` when given."""
        owned = [spec for spec, owner in self.sources if owner == member]
        return owned if workdir is None else [below(spec, workdir) for spec in owned]


def below(spec: SourceSpec, workdir: Path) -> SourceSpec:
    """``spec`` with a relative path resolved against ``workdir`` (absolute ones kept)."""
    path = workdir / spec.path  # an absolute spec.path replaces workdir
    channel = None if spec.channel is None else replace(spec.channel, path=path)
    return replace(spec, path=path, channel=channel)


def parse(document: Any, origin: str) -> Integration:
    mappings = check_document(document, origin)
    sources = [(SourceSpec(s["id"], Path(s["path"]), SourceKind(s["kind"])), s["owner"])
               for s in document["sources"]]
    for i, c in enumerate(document.get("channels", [])):
        try:
            compile_offline(c["schema"], f"channels[{i}].schema")
        except SchemaRefused as exc:
            raise IntegrationError(f"{origin}: {exc}") from None
        spec = ChannelSpec(c["id"], Path(c["path"]), c["schema"], c["max_record_bytes"],
                           c["max_bytes_per_minute"])
        sources.append((SourceSpec(c["id"], spec.path, SourceKind.CHANNEL, spec), c["owner"]))
    return Integration(sources, mappings)


def load(path: Path) -> Integration:
    return parse(load_document(path), str(path))
