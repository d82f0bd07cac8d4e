"""Gorilla (Pelkonen et al., VLDB 2015), for size only: a plain Python bit writer.

Steps are its timestamps: the first in 64 bits, the first delta in 64 (the paper: 14),
then each delta of deltas as ``0`` (zero), ``10`` + 7 bits, ``110`` + 9, ``1110`` + 12,
or ``1111`` + 64 (the paper: 32; steps may jump further). Wall times and values are its
floats: the first in 64 bits, then each XOR with the previous value as ``0`` (equal),
``10`` + the meaningful bits when they fit the previous window of leading and trailing
zeros, or ``11`` + 5 bits of leading zeros (at most 31) + 6 bits of length + the bits.

Its decoder is a bit-at-a-time loop: not vectorizable in numpy, so no decode speed.
"""

from __future__ import annotations

from itertools import pairwise

from bench.codecs.corpus import Chunk, Floats, Ints

_BUCKETS = ((0, 0, "0"), (63, 7, "10"), (255, 9, "110"), (2047, 12, "1110"))


class BitWriter:
    """Bits as strings of '0' and '1', joined once: linear, unlike a growing int."""

    __slots__ = ("_parts",)

    def __init__(self) -> None:
        self._parts: list[str] = []

    def write(self, value: int, bits: int) -> None:
        if bits:
            self._parts.append(format(value & ((1 << bits) - 1), f"0{bits}b"))

    def flag(self, bits: str) -> None:
        self._parts.append(bits)

    def getvalue(self) -> bytes:
        text = "".join(self._parts)
        text += "0" * (-len(text) % 8)
        return int(text, 2).to_bytes(len(text) // 8, "big") if text else b""


def timestamps(steps: Ints) -> bytes:
    out = BitWriter()
    items = steps.tolist()
    if items:
        out.write(items[0], 64)
    if len(items) > 1:
        out.write(items[1] - items[0], 64)
    for before, previous, current in zip(items, items[1:], items[2:], strict=False):
        dod = (current - previous) - (previous - before)
        for bound, bits, prefix in _BUCKETS:
            if -bound <= dod <= bound + (bits > 0):
                out.flag(prefix)
                out.write(dod, bits)
                break
        else:
            out.flag("1111")
            out.write(dod, 64)
    return out.getvalue()


def floats(values: Floats) -> bytes:
    out = BitWriter()
    items = values.view("<u8").tolist()
    if not items:
        return b""
    out.write(items[0], 64)
    leading, trailing = 65, 65  # no window yet
    for previous, current in pairwise(items):
        xor = previous ^ current
        if not xor:
            out.flag("0")
            continue
        lead = min(64 - xor.bit_length(), 31)
        trail = (xor & -xor).bit_length() - 1
        if lead >= leading and trail >= trailing:
            out.flag("10")
            out.write(xor >> trailing, 64 - leading - trailing)
            continue
        leading, trailing = lead, trail
        length = 64 - lead - trail
        out.flag("11")
        out.write(lead, 5)
        out.write(length % 64, 6)  # 64 meaningful bits are written as 0
        out.write(xor >> trail, length)
    return out.getvalue()


def encode(chunk: Chunk) -> tuple[bytes, bytes, bytes]:
    return timestamps(chunk.steps), floats(chunk.walls), floats(chunk.values)
