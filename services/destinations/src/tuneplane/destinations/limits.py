"""How big a TelemetryDestination may be, checked before anything else reads it: at most
``MAX_DEPTH`` levels of nesting (walked without recursion, so a resource nested thousands
deep is refused instead of exhausting the stack of whoever composes it), and a spec of at
most ``MAX_SPEC_BYTES`` as JSON (every destination ends up in one collector
configuration, a ConfigMap of at most 1 MiB)."""

from __future__ import annotations

import json
from typing import Any

#: Levels of nesting a document may have, counted from the document itself (a sink's
#: ``config`` is the fifth).
MAX_DEPTH = 32
#: The spec's size as compact JSON (UTF-8).
MAX_SPEC_BYTES = 64 * 1024
#: Paths longer than this are shown cut (their keys are the document's).
SHOWN_PATH = 200


def shown(path: str) -> str:
    return path if len(path) <= SHOWN_PATH else f"{path[:SHOWN_PATH]}..."


def too_deep(document: Any, limit: int = MAX_DEPTH) -> str | None:
    """The path of the first value nested deeper than ``limit`` levels, or None."""
    stack: list[tuple[Any, str, int]] = [(document, "", 1)]
    while stack:
        node, path, depth = stack.pop()
        if isinstance(node, dict):
            children = [(value, f"{path}.{key}" if path else str(key))
                        for key, value in node.items()]
        elif isinstance(node, list):
            children = [(value, f"{path}[{i}]") for i, value in enumerate(node)]
        else:
            continue
        if depth > limit:
            return path or "(document)"
        stack.extend((child, where, depth + 1) for child, where in reversed(children))
    return None


def spec_bytes(document: Any) -> int:
    """The size of the document's spec as compact JSON."""
    spec = document.get("spec") if isinstance(document, dict) else None
    return len(json.dumps(spec, ensure_ascii=False, separators=(",", ":"),
                          default=str).encode())


def refusal(document: Any) -> str | None:
    """Why ``document`` is too big (the field's path first), or None."""
    deep = too_deep(document)
    if deep is not None:
        return (f"{shown(deep)}: nested deeper than {MAX_DEPTH} levels (counted from the "
                f"document); a TelemetryDestination nests at most {MAX_DEPTH}")
    size = spec_bytes(document)
    if size > MAX_SPEC_BYTES:
        return (f"spec: {size} bytes as JSON; a TelemetryDestination's spec is at most "
                f"{MAX_SPEC_BYTES} bytes (64 KiB)")
    return None
