"""Settings printed as ``export`` lines, for ``eval "$(scripts/... up)"``, and kept in a
file to source later."""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from pathlib import Path


def export_lines(values: Mapping[str, str]) -> str:
    """``export NAME=value`` lines, each value quoted for a POSIX shell where it needs it."""
    return "".join(f"export {name}={shlex.quote(value)}\n" for name, value in values.items())


def publish(values: Mapping[str, str], path: Path | None = None) -> None:
    """Print the export lines of ``values`` on stdout, and write them to ``path``."""
    lines = export_lines(values)
    if path is not None:
        path.write_text(lines)
    print(lines, end="", flush=True)
