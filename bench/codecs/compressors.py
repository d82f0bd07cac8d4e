"""Block compressors: pyarrow's (no new dependency) and the ``zstandard`` package's.

pyarrow's ``Codec`` makes a new zstd context for every call: ~26 µs each, which is most
of a small chunk's decode. ``zstandard`` keeps one compression and one decompression
context: ~3 µs a call for a 2,000-byte plane. ``zstandard`` is not a dependency of the
project (``uv pip install zstandard`` adds it for this benchmark); without it its
candidates are left out, and this module still type-checks (imported by name).
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any, Protocol, TypeAlias

import pyarrow as pa

#: bytes, a memoryview or a pyarrow.Buffer: whatever ``np.frombuffer`` takes.
Buffer: TypeAlias = Any


def _optional(name: str) -> ModuleType | None:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


zstandard = _optional("zstandard")


class Compressor(Protocol):
    @property
    def label(self) -> str: ...

    def compress(self, data: bytes) -> bytes: ...

    def decompress(self, data: Buffer, size: int) -> Buffer: ...


class ArrowCompressor:
    """pyarrow's codec: zstd at a level, or lz4 (frame format)."""

    __slots__ = ("_codec", "label")

    def __init__(self, name: str, level: int | None = None) -> None:
        self.label = f"{name}{'' if level is None else level}(pa)"
        self._codec = pa.Codec(name, compression_level=level)

    def compress(self, data: bytes) -> bytes:
        return bytes(self._codec.compress(data, asbytes=True))

    def decompress(self, data: Buffer, size: int) -> Buffer:
        return self._codec.decompress(data, decompressed_size=size)


class ZstdCompressor:
    """python-zstandard with reused contexts; frames without content size or checksum."""

    __slots__ = ("_compressor", "_decompressor", "label")

    def __init__(self, level: int) -> None:
        if zstandard is None:
            raise RuntimeError("zstandard is not installed")
        self.label = f"zstd{level}"
        self._compressor: Any = zstandard.ZstdCompressor(level=level, write_content_size=False)
        self._decompressor: Any = zstandard.ZstdDecompressor()

    def compress(self, data: bytes) -> bytes:
        return bytes(self._compressor.compress(data))

    def decompress(self, data: Buffer, size: int) -> Buffer:
        return bytes(self._decompressor.decompress(data, max_output_size=size))
