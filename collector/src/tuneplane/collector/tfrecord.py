"""TFRecord framing, read resumably from a byte offset, with CRC-32C checks.

A record is: uint64 length, uint32 masked CRC-32C of the length bytes, the data,
uint32 masked CRC-32C of the data (all little-endian). A record not complete yet
is "not yet", not an error: the scan stops before it and resumes there. A record
whose data CRC fails is reported and skipped. A length whose CRC fails means the
framing is lost: the scan looks for the next offset whose header checks out and
goes on from there, reporting the bytes it skipped.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

# ``crc32c`` is imported where it is used: its package imports importlib.metadata, email and
# zipfile (~1.5 MiB), which a collector reading with the compiled reader never needs.

HEADER = 12
FOOTER = 4
#: A length beyond this with a valid CRC is treated as damage (no real summary is this big).
MAX_RECORD_BYTES = 512 * 1024 * 1024
_MASK_DELTA = 0xA282EAD8
_header = struct.Struct("<QI")
_footer = struct.Struct("<I")


def masked_crc(data: bytes | memoryview) -> int:
    import crc32c

    crc = crc32c.crc32c(data)
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def frame(data: bytes) -> bytes:
    """One TFRecord of ``data`` (for tests and tools that write event files)."""
    length = struct.pack("<Q", len(data))
    return length + struct.pack("<I", masked_crc(length)) + data + struct.pack(
        "<I", masked_crc(data))


@dataclass(frozen=True, slots=True)
class Damage:
    offset: int
    reason: str

    @classmethod
    def lost_framing(cls, offset: int, skipped: int) -> Damage:
        return cls(offset, f"bad record length CRC; skipped {skipped} bytes to resynchronise")

    @classmethod
    def bad_data(cls, offset: int) -> Damage:
        return cls(offset, "bad record data CRC; record skipped")


@dataclass(slots=True)
class Scan:
    """What one pass over a buffer found. ``consumed`` bytes need never be read again."""

    records: list[tuple[int, bytes]] = field(default_factory=list)  # (offset, data)
    damage: list[Damage] = field(default_factory=list)
    consumed: int = 0
    wanted: int = 0  # bytes a record in progress needs in the buffer, when over its size

    @property
    def count(self) -> int:
        """Good records framed."""
        return len(self.records)


#: Headers already checked → their record's length: records of one tag repeat a few lengths,
#: so most headers need no CRC of their own (bounded: damage cannot grow it).
_checked_headers: dict[bytes, int] = {}


def _header_at(view: memoryview, pos: int) -> int | None:
    """The record length at ``pos`` if its header checks out, else None."""
    import crc32c

    length, crc = _header.unpack_from(view, pos)
    actual = crc32c.crc32c(view[pos:pos + 8])
    if crc != ((((actual >> 15) | (actual << 17)) + _MASK_DELTA) & 0xFFFFFFFF) \
            or length > MAX_RECORD_BYTES:
        return None
    return int(length)


def _resync(view: memoryview, start: int) -> int | None:
    """The first offset after ``start`` whose header checks out, if any in the buffer."""
    for pos in range(start + 1, len(view) - HEADER + 1):
        if _header_at(view, pos) is not None:
            return pos
    return None


def scan(buffer: bytes, base: int, limit: int | None = None) -> Scan:
    """Frame the records of ``buffer``, which starts at file offset ``base``.

    Stops after ``limit`` good records, if given. After a damaged header with no good
    header behind it in the buffer, the last bytes a header could still start in are
    left unconsumed for the next scan.
    """
    import crc32c

    view = memoryview(buffer)
    result = Scan()
    records, append = result.records, result.records.append
    pos, size = 0, len(buffer)
    wanted = size if limit is None else limit
    # The hot loop of TensorBoard reading: names bound locally, the header check inlined.
    crc, unpack_footer = crc32c.crc32c, _footer.unpack_from
    delta, mask = _MASK_DELTA, 0xFFFFFFFF
    lengths = _checked_headers
    while size - pos >= HEADER and len(records) < wanted:
        header = buffer[pos:pos + HEADER]
        length = lengths.get(header)
        if length is None:
            length = _header_at(view, pos)
            if length is not None and len(lengths) < 4096:
                lengths[header] = length
        if length is None:
            found = _resync(view, pos)
            end = found if found is not None else size - HEADER + 1
            result.damage.append(Damage.lost_framing(base + pos, end - pos))
            pos = end
            continue
        start = pos + HEADER
        end = start + length + FOOTER
        if end > size:
            result.wanted = end - pos
            break
        data = buffer[start:start + length]
        actual = crc(data)
        if unpack_footer(view, start + length)[0] == \
                ((((actual >> 15) | (actual << 17)) + delta) & mask):
            append((base + pos, data))
        else:
            result.damage.append(Damage.bad_data(base + pos))
        pos = end
    result.consumed = pos
    return result
