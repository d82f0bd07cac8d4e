"""The information a corpus's points carry under the very model that drew them: no lossless
encoding can store them in fewer bits on average (Shannon's source coding theorem), however
clever, so it is the floor under any bytes-per-point goal on that corpus.

Each random draw of the corpus (``corpus.py``) is a real number the generator then rounds to
a float (float32 widened, or float64): the point's value is one bin of that float's
spacing, whose probability is about the draw's density there times the bin's width. Its
information is ``-log2`` of that probability, summed over the corpus: a Monte Carlo
estimate of the entropy of the corpus's random part. What the generator computes from
other points (a cosine learning rate, a running mean, a throughput from the wall times)
carries nothing more and is counted as zero; so are the four special values at fixed places.
A wall time shared by several points (one clock read for several tags) is counted once.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

Floats = npt.NDArray[np.floating[Any]]

#: A point's probability is never counted above one (a bin wider than the density's peak).
_FLOOR = 0.0


def _widths(kept: Floats, float32: bool) -> Floats:
    """The width of the bin each kept value stands for: its float's spacing."""
    if float32:
        return np.spacing(kept.astype(np.float32)).astype(np.float64)
    return np.spacing(kept)


class Information:
    """Bits of the corpus's random draws, by part (``values``, ``walls``)."""

    def __init__(self) -> None:
        self.bits = {"values": 0.0, "walls": 0.0}

    def _count(self, part: str, log_density: Floats, widths: Floats) -> None:
        with np.errstate(invalid="ignore", divide="ignore"):  # NaN, ±inf: not drawn
            bits = -(log_density / math.log(2) + np.log2(widths))
        finite = np.isfinite(bits)
        self.bits[part] += float(np.maximum(bits[finite], _FLOOR).sum())

    def gaussian(self, kept: Floats, mean: Floats, sigma: float, *, float32: bool) -> None:
        """Values drawn as ``mean`` plus normal noise of ``sigma``, then rounded."""
        z = (kept - mean) / sigma
        log_density = -0.5 * z * z - math.log(sigma * math.sqrt(2 * math.pi))
        self._count("values", log_density, _widths(kept, float32))

    def lognormal(self, kept: Floats, sigma: float, *, float32: bool) -> None:
        """Values drawn lognormal (mean of the log 0, ``sigma``), then rounded."""
        log_x = np.log(kept)
        log_density = (-0.5 * (log_x / sigma) ** 2 - log_x
                       - math.log(sigma * math.sqrt(2 * math.pi)))
        self._count("values", log_density, _widths(kept, float32))

    def jitter(self, kept: Floats, base: Floats, mean: float) -> None:
        """Wall times drawn as ``base`` plus exponential jitter of ``mean`` seconds."""
        late = np.maximum(kept - base, 0.0)
        log_density = -late / mean - math.log(mean)
        self._count("walls", log_density, _widths(kept, False))
