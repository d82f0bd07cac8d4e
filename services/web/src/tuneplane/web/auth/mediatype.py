"""The type user bytes are served as: decided by their magic bytes, never by a name or a
tag, so a browser is never handed something it would run.

A hostile tenant chooses every byte of a rich record and its tag ("x.png" holding SVG or
HTML), so only formats a browser merely decodes are named, and only when the bytes begin
as those formats do: PNG, JPEG, GIF and WebP images, RIFF/WAVE audio. Everything else is
``application/octet-stream`` as an attachment (saved, never rendered). Never SVG or HTML:
both carry script. ``nosniff`` stops the browser second-guessing the type, and the
answer's own policy sandboxes it should someone open it as a page.
"""

from __future__ import annotations

from typing import Final

from fastapi import Response

OCTET_STREAM: Final = "application/octet-stream"
#: A served object opened as a page runs nothing, loads nothing.
SANDBOX: Final = "default-src 'none'; sandbox"


def _riff(data: bytes, form: bytes) -> bool:
    return len(data) >= 12 and data[:4] == b"RIFF" and data[8:12] == form


def sniffed(data: bytes) -> str | None:
    """The image or audio type ``data`` is by its first bytes; None for anything else."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if _riff(data, b"WEBP"):
        return "image/webp"
    if _riff(data, b"WAVE"):
        return "audio/wav"
    return None


def served(data: bytes) -> Response:
    """``data`` as an answer of the type its bytes show, else as a download."""
    media_type = sniffed(data)
    headers = {"X-Content-Type-Options": "nosniff", "Content-Security-Policy": SANDBOX}
    if media_type is None:
        media_type = OCTET_STREAM
        headers["Content-Disposition"] = "attachment"
    return Response(data, media_type=media_type, headers=headers)
