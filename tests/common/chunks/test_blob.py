"""A chunk's points stored as one blob come back bit for bit, whatever they hold: any
int64 steps, any float64 bit patterns (NaN payloads, signalling NaNs, ±inf, -0.0,
subnormals), float32-exact or not, of any length; a blob that is not one is refused."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tuneplane.common.chunks.blob import Codec, Points

CODEC = Codec()


def same(found: Points, steps: np.ndarray, walls: np.ndarray, values: np.ndarray) -> None:
    assert found.steps.dtype == np.int64
    assert found.wall_times.dtype == found.values.dtype == np.float64
    assert np.array_equal(found.steps, steps)
    assert np.array_equal(found.wall_times.view(np.uint64), walls.view(np.uint64))
    assert np.array_equal(found.values.view(np.uint64), values.view(np.uint64))


words = st.integers(min_value=0, max_value=2**64 - 1)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(min_value=-(2**63), max_value=2**63 - 1), words, words),
                max_size=300))
def test_any_bits_come_back_exactly(points: list[tuple[int, int, int]]) -> None:
    steps = np.array([p[0] for p in points], dtype=np.int64)
    walls = np.array([p[1] for p in points], dtype=np.uint64).view(np.float64)
    values = np.array([p[2] for p in points], dtype=np.uint64).view(np.float64)
    same(CODEC.decode(CODEC.encode(steps, walls, values)), steps, walls, values)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(width=32), min_size=1, max_size=500),
       st.integers(min_value=0, max_value=10**12), st.integers(min_value=1, max_value=1000))
def test_float32_values_and_regular_steps_come_back_exactly(
        values32: list[float], first: int, stride: int) -> None:
    n = len(values32)
    steps = first + stride * np.arange(n, dtype=np.int64)
    walls = np.asarray(1.7e9 + 0.05 * np.arange(n), dtype=np.float64)
    values = np.array(values32, dtype=np.float32).astype(np.float64)
    same(CODEC.decode(CODEC.encode(steps, walls, values)), steps, walls, values)


def test_special_values_and_a_nan_payload_come_back() -> None:
    special = np.array([0x7FF8000000000001, 0x7FF0000000000001, 0xFFF8DEADBEEF0000,
                        0x7FF0000000000000, 0xFFF0000000000000, 0x8000000000000000, 0,
                        1, 0x000FFFFFFFFFFFFF], dtype=np.uint64).view(np.float64)
    steps = np.arange(len(special), dtype=np.int64)
    same(CODEC.decode(CODEC.encode(steps, special, special)), steps, special, special)


def test_a_training_curve_takes_a_few_bytes_a_point() -> None:
    rng = np.random.default_rng(7)
    n = 2000
    steps = np.arange(n, dtype=np.int64)
    walls = 1.7e9 + 0.05 * steps + rng.exponential(0.001, n)
    loss = (2.5 * np.exp(-steps / 3000) + 0.1 + rng.normal(0, 0.05, n)).astype(np.float32)
    blob = CODEC.encode(steps, walls, loss.astype(np.float64))
    assert len(blob) < 6 * n  # 24 bytes a point as they are
    constant = CODEC.encode(steps, np.full(n, 1.7e9), np.full(n, 0.5))
    assert len(constant) < 100  # regular steps, one wall time, one value: no planes


def test_a_blob_of_another_version_or_length_is_refused() -> None:
    steps = np.arange(10, dtype=np.int64)
    blob = CODEC.encode(steps, steps.astype(np.float64), steps.astype(np.float64))
    with pytest.raises(ValueError, match="version 9"):
        CODEC.decode(b"\x09" + blob[1:])
    with pytest.raises(ValueError, match="holds"):
        CODEC.decode(blob + b"\x00")
    for cut in (3, len(blob) // 2, len(blob) - 1):
        with pytest.raises(ValueError, match="not a chunk blob"):
            CODEC.decode(blob[:cut])
    with pytest.raises(ValueError, match="differ in length"):
        CODEC.encode(steps, steps[:5].astype(np.float64), steps.astype(np.float64))


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200), st.integers(min_value=0, max_value=199), st.binary(max_size=8))
def test_a_damaged_blob_is_refused_never_misread(garbage: bytes, at: int, patch: bytes) -> None:
    steps = np.arange(50, dtype=np.int64)
    blob = CODEC.encode(steps, steps.astype(np.float64) / 2, np.sin(steps.astype(np.float64)))
    damaged = blob[:at] + patch + blob[at + len(patch):]
    for candidate in (garbage, damaged):
        try:
            found = CODEC.decode(candidate)
        except ValueError:
            continue
        # what decodes is what a blob of those points says (no silent misread of length)
        assert len(found.steps) == len(found.wall_times) == len(found.values)


def test_words_no_encoder_writes_are_refused() -> None:
    """A float32 signalling NaN (widening would quiet it: other bits than stored), steps
    as 4-byte words, or a mode or flag a column may not have: refused, never misread."""
    from tuneplane.common.chunks import blob, planes
    made = planes.Planes()
    one = np.array([7], dtype=np.uint64)

    def column(words: np.ndarray, mode: int, flags: int = 0) -> bytes:
        return planes.encode(words, (mode,), flags, made)
    steps, walls = column(one, planes.DOD), column(one, planes.DELTA)
    signalling = column(np.array([0x7F800001], dtype=np.uint32), planes.SPLIT, planes.FLOAT32)
    quiet = column(np.array([0x7FC00001], dtype=np.uint32), planes.SPLIT, planes.FLOAT32)
    header = blob.HEADER.pack(blob.VERSION, 1)
    found = CODEC.decode(header + steps + walls + quiet)  # a quiet NaN widens exactly
    assert found.values.view(np.uint64).tolist() == [0x7FF8000020000000]
    for damaged in (header + steps + walls + signalling,
                    header + column(np.array([7], np.uint32), planes.DOD, planes.FLOAT32)
                    + walls + quiet,
                    header + column(one, planes.XOR) + walls + quiet,
                    header + steps + walls[:0] + bytes([walls[0] | 0x40]) + walls[1:] + quiet):
        with pytest.raises(ValueError, match="not a chunk blob"):
            CODEC.decode(damaged)
