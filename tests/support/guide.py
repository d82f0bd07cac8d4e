"""The operator guide's command blocks: each fenced block's language, marker and body."""

from __future__ import annotations

import re

from tests.support.environment import ROOT

GUIDE = ROOT / "docs" / "operator-guide.md"
FENCE = re.compile(r"^```(\S*)(?: (\S+))?\n(.*?)^```$", re.M | re.S)


def blocks(text: str | None = None) -> list[tuple[str, str, str]]:
    """(language, marker, body) of every fenced block of ``text`` (the guide's)."""
    return [(m.group(1), m.group(2) or "", m.group(3)) for m in FENCE.finditer(
        GUIDE.read_text() if text is None else text)]


def marked(marker: str) -> list[str]:
    """The bodies of the guide's ``sh MARKER`` blocks, in order."""
    return [body for language, mark, body in blocks() if (language, mark) == ("sh", marker)]
