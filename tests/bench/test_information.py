"""The information a bench corpus carries (``bench/codecs/information.py``): the floor its
bytes-per-point figures are judged against, so it must be the entropy a textbook gives."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bench.codecs.information import Information

N = 400_000


def test_normal_draws_carry_their_differential_entropy_less_the_bins_width() -> None:
    """N(0.75, 0.01) in float64: all in [0.5, 1), bins of 2**-53, so each draw carries
    log2(sigma · sqrt(2 pi e)) + 53 bits."""
    rng = np.random.default_rng(1)
    sigma = 0.01
    info = Information()
    info.gaussian(0.75 + rng.normal(0, sigma, N), np.full(N, 0.75), sigma, float32=False)
    expected = math.log2(sigma * math.sqrt(2 * math.pi * math.e)) + 53
    assert info.bits["values"] / N == pytest.approx(expected, abs=0.01)
    assert info.bits["walls"] == 0


def test_float32_values_are_binned_by_float32_spacing() -> None:
    rng = np.random.default_rng(2)
    sigma = 0.01
    kept = (0.75 + rng.normal(0, sigma, N)).astype(np.float32).astype(np.float64)
    info = Information()
    info.gaussian(kept, np.full(N, 0.75), sigma, float32=True)
    expected = math.log2(sigma * math.sqrt(2 * math.pi * math.e)) + 24
    assert info.bits["values"] / N == pytest.approx(expected, abs=0.01)


def test_a_jittered_clock_read_carries_the_jitters_entropy_at_its_doubles_spacing() -> None:
    """Exponential jitter of mean 1 ms after 1.7e9 s, where a double's spacing is 2**-22 s:
    log2(e · 1 ms) + 22 bits a read (about 13.5)."""
    rng = np.random.default_rng(3)
    base = 1.7e9 + np.arange(N) * 0.05
    info = Information()
    info.jitter(base + rng.exponential(1e-3, N), base, 1e-3)
    expected = math.log2(math.e * 1e-3) + 22
    assert info.bits["walls"] / N == pytest.approx(expected, abs=0.02)
    assert info.bits["values"] == 0


def test_what_is_not_drawn_carries_nothing() -> None:
    """A value exactly at its mean's bin with a wide density cannot count below zero."""
    info = Information()
    info.gaussian(np.array([1.0, math.nan, math.inf]), np.array([1.0, 1.0, 1.0]), 1e-20,
                  float32=False)
    assert info.bits["values"] == 0
