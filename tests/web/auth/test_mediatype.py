"""The type user bytes are served as, decided by magic bytes alone (no services needed):
each image and audio type only when the bytes are one, everything else an attachment of
octet-stream, SVG and HTML above all."""

from __future__ import annotations

import pytest

from tuneplane.web.auth.mediatype import OCTET_STREAM, SANDBOX, served, sniffed

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"
JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF"
WEBP = b"RIFF\x24\x00\x00\x00WEBPVP8 "
WAV = b"RIFF\x24\x00\x00\x00WAVEfmt "
HOSTILE = [
    b'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>',
    b"<?xml version='1.0'?><svg onload='alert(1)'/>",
    b"<!doctype html><html><script>alert(1)</script></html>",
    b"<script>alert(1)</script>\x89PNG\r\n\x1a\n",  # PNG's signature, but not first
    b"GIF8<script>",  # a GIF prefix cut short
    b"RIFF\x00\x00\x00\x00AVI LIST",  # RIFF, but neither WAVE nor WEBP
    b"RIFFWAVE",  # too short to say
    b"%PDF-1.7",
    b"",
]


@pytest.mark.parametrize(("data", "media_type"), [
    (PNG, "image/png"), (JPEG, "image/jpeg"), (b"GIF87a\x01\x00", "image/gif"),
    (b"GIF89a\x01\x00", "image/gif"), (WEBP, "image/webp"), (WAV, "audio/wav")])
def test_images_and_wav_are_served_as_what_their_bytes_are(data: bytes,
                                                           media_type: str) -> None:
    assert sniffed(data) == media_type
    answer = served(data)
    assert answer.headers["content-type"] == media_type
    assert answer.headers["x-content-type-options"] == "nosniff"
    assert answer.headers["content-security-policy"] == SANDBOX
    assert "content-disposition" not in answer.headers
    assert answer.body == data


@pytest.mark.parametrize("data", HOSTILE)
def test_anything_else_is_an_octet_stream_attachment(data: bytes) -> None:
    assert sniffed(data) is None
    answer = served(data)
    assert answer.headers["content-type"] == OCTET_STREAM
    assert answer.headers["content-disposition"] == "attachment"
    assert answer.headers["x-content-type-options"] == "nosniff"
    assert answer.body == data
