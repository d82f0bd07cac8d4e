"""TFRecord framing: resumable, damage reported and skipped, never a bad record emitted."""

from __future__ import annotations

import io

from hypothesis import given, settings
from hypothesis import strategies as st
from tensorboard.summary.writer.record_writer import RecordWriter

from tuneplane.collector import tfrecord
from tuneplane.collector.tfrecord import frame, scan

payloads = st.lists(st.binary(min_size=0, max_size=300), min_size=1, max_size=30)


def layout(records: list[bytes]) -> tuple[bytes, list[tuple[int, bytes]]]:
    data, placed, offset = b"", [], 0
    for record in records:
        placed.append((offset, record))
        data += frame(record)
        offset += len(frame(record))
    return data, placed


def follow(data: bytes, cuts: list[int]) -> tfrecord.Scan:
    """Scan as a reader following a growing file does: resume at ``consumed`` each time."""
    total = tfrecord.Scan()
    offset = 0
    for end in [*sorted(c for c in cuts if c <= len(data)), len(data)]:
        part = scan(data[offset:end], offset)
        total.records += part.records
        total.damage += part.damage
        offset += part.consumed
    total.consumed = offset
    return total


@given(st.binary(max_size=2000))
def test_framing_matches_tensorboards_record_writer(record: bytes) -> None:
    sink = io.BytesIO()
    RecordWriter(sink).write(record)
    assert frame(record) == sink.getvalue()


@given(payloads, st.lists(st.integers(min_value=0, max_value=10_000), max_size=8))
def test_a_growing_file_yields_every_record_once_in_order(records: list[bytes],
                                                          cuts: list[int]) -> None:
    data, placed = layout(records)
    result = follow(data, cuts)
    assert result.records == placed
    assert result.damage == []
    assert result.consumed == len(data)


@given(payloads, st.integers(min_value=0))
def test_truncation_yields_exactly_the_complete_records(records: list[bytes], cut: int) -> None:
    data, placed = layout(records)
    cut %= len(data) + 1
    result = scan(data[:cut], 0)
    assert result.records == [(o, r) for o, r in placed if o + len(frame(r)) <= cut]
    assert result.damage == []


@settings(max_examples=300)
@given(payloads, st.lists(st.integers(min_value=0), min_size=1, max_size=6),
       st.lists(st.integers(min_value=0), max_size=4))
def test_bit_flips_never_crash_and_never_emit_a_damaged_record(
        records: list[bytes], flips: list[int], cuts: list[int]) -> None:
    data, placed = layout(records)
    damaged = bytearray(data)
    for flip in flips:
        bit = flip % (len(damaged) * 8)
        damaged[bit // 8] ^= 1 << (bit % 8)
    result = follow(bytes(damaged), [c % (len(damaged) + 1) for c in cuts])
    assert set(result.records) <= set(placed)
    touched = {flip % (len(damaged) * 8) // 8 for flip in flips}
    for offset, record in placed:
        intact = not any(offset <= b < offset + len(frame(record)) for b in touched)
        if intact and (offset, record) not in result.records:
            # an intact record may only be lost when a damaged header before it swallowed it
            assert result.damage, f"record at {offset} lost without a damage report"
    if result.records != [p for p in placed if p in result.records]:
        raise AssertionError("records out of order")


def test_data_crc_failure_is_reported_at_its_offset_and_reading_goes_on() -> None:
    data, placed = layout([b"first", b"second", b"third"])
    damaged = bytearray(data)
    damaged[placed[1][0] + tfrecord.HEADER] ^= 0xFF  # a byte of the second record's data
    result = scan(bytes(damaged), 100)
    assert [r for _, r in result.records] == [b"first", b"third"]
    assert [(d.offset, d.reason) for d in result.damage] == [
        (100 + placed[1][0], "bad record data CRC; record skipped")]


def test_bad_length_crc_resynchronises_at_the_next_good_header() -> None:
    data, placed = layout([b"first", b"second", b"third"])
    damaged = bytearray(data)
    damaged[placed[1][0]] ^= 0x01  # the second record's length
    result = scan(bytes(damaged), 0)
    assert [r for _, r in result.records] == [b"first", b"third"]
    (damage,) = result.damage
    assert damage.offset == placed[1][0]
    assert f"skipped {placed[2][0] - placed[1][0]} bytes" in damage.reason
