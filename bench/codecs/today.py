"""Today's chunk columns: PostgreSQL arrays, built by the projector's ``pgbinary`` and read
back by the web's ``received`` from ``array_send``'s bytes (PostgreSQL decompresses lz4
and sends them; that server side is not timed here)."""

from __future__ import annotations

from bench.codecs.corpus import Chunk, Floats, Ints
from tuneplane.common.chunks.sent import received
from tuneplane.projector import pgbinary


def encode(chunk: Chunk) -> tuple[bytes, bytes, bytes]:
    """Each column as ``array_send`` gives it (a COPY field without its length)."""
    return (pgbinary.int8_array(chunk.steps)[4:], pgbinary.float8_array(chunk.walls)[4:],
            pgbinary.float8_array(chunk.values)[4:])


def decode(blobs: tuple[bytes, ...], n: int) -> tuple[Ints, Floats, Floats]:
    return received(blobs[0], "i8"), received(blobs[1], "f8"), received(blobs[2], "f8")
