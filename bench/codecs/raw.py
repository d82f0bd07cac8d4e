"""Each column's little-endian bytes compressed as they are (no transform)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bench.codecs.compressors import Compressor
from bench.codecs.corpus import Chunk, Floats, Ints


@dataclass(frozen=True, slots=True)
class RawCodec:
    """Steps, wall times and values each compressed as one block."""

    compressor: Compressor

    @property
    def name(self) -> str:
        return f"raw {self.compressor.label}"

    def encode(self, chunk: Chunk) -> tuple[bytes, bytes, bytes]:
        c = self.compressor
        return (c.compress(chunk.steps.tobytes()), c.compress(chunk.walls.tobytes()),
                c.compress(chunk.values.tobytes()))

    def decode(self, blobs: tuple[bytes, ...], n: int) -> tuple[Ints, Floats, Floats]:
        c = self.compressor
        return (np.frombuffer(c.decompress(blobs[0], 8 * n), dtype=np.int64),
                np.frombuffer(c.decompress(blobs[1], 8 * n), dtype=np.float64),
                np.frombuffer(c.decompress(blobs[2], 8 * n), dtype=np.float64))
