"""The benchmark's corpora: deterministic curve chunks shaped like what collectors send.

Every corpus is ``points`` points over five tags, cut into chunks of ``CHUNK`` points: a
batch of 10,000 points holds one 2,000-point chunk of each tag, so a tag's chunk ``b``
belongs to batch ``b``. Steps are regular (0, 1, 2, …; one tag of ``tensorboard`` every
10 steps). Wall times are float64 seconds since the epoch near 1.7e9, where a double's
ulp is 2**-22 s (238 ns): a clock read there has about log2(jitter / 238 ns) random bits.

- ``tensorboard``: float32 values widened to float64, as every TensorBoard
  ``simple_value`` is: a noisy decaying loss (with a NaN carrying a payload, ±inf and
  -0.0 in it), a noisy accuracy in [0, 1], a cosine learning rate, a lognormal gradient
  norm, and an eval loss every 10 steps. Wall times (``time.time()`` at each
  ``add_scalar``): the step's end, ``1.7e9 + 0.05 * step`` plus an exponential jitter of
  mean 1 ms, then the tag's call in the step, ``10 µs * tag index`` plus an exponential
  jitter of mean 5 µs.
- ``jsonl-time``: float64 values as a Python script computes them: a float32 loss widened
  (``torch`` ``.item()``), the epoch's running mean of it (1,000 steps an epoch, full
  mantissa), a float64 cosine learning rate, a throughput ``8192 / step duration`` (full
  mantissa, one NaN with a payload) and the fractional epoch ``step / 1000``. Wall times:
  each line's ``time.time()``, as ``tensorboard``'s.
- ``jsonl-read``: the same values; the lines carry no wall time, so the collector gives
  every point of a read round its read time (``walls_read``): one round a second of
  training, 20 lines a round, so runs of 20 equal wall times.
- ``constant``: constant values (float32-widened and float64), regular steps, and one
  read time per batch (a finished file read at once): should cost next to nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bench.codecs.information import Information

Ints = npt.NDArray[np.int64]
Floats = npt.NDArray[np.float64]

CHUNK = 2_000
TAGS = 5
SEED = 20261207
KINDS = ("tensorboard", "jsonl-time", "jsonl-read", "constant")

T0 = 1.7e9
STEP_SECONDS = 0.05
JITTER_SECONDS = 0.001
EVENT_SECONDS = 1e-5
READ_ROUND_SECONDS = 1.0


@dataclass(frozen=True, slots=True)
class Chunk:
    tag: str
    batch: int
    steps: Ints
    walls: Floats
    values: Floats

    def __len__(self) -> int:
        return len(self.steps)


@dataclass(frozen=True, slots=True)
class Series:
    tag: str
    steps: Ints
    walls: Floats
    values: Floats


def _widened(values: Floats) -> Floats:
    """What float32 storage (TensorBoard, ``torch`` ``.item()``) makes of float64 values."""
    return values.astype(np.float32).astype(np.float64)


def _nan32(pattern: int) -> float:
    """The float32 NaN of bit ``pattern``, widened (its payload kept)."""
    return float(np.array([pattern], dtype=np.uint32).view(np.float32)[0])


def _nan64(pattern: int) -> float:
    return float(np.array([pattern], dtype=np.uint64).view(np.float64)[0])


def _with_specials(values: Floats, nan: float) -> Floats:
    """``values`` with a NaN (``nan``, payload included), ±inf and -0.0 at fixed places."""
    out = values.copy()
    n = len(out)
    for at, special in ((n // 7, nan), (n // 5, np.inf), (n // 3, -np.inf), (n // 2, -0.0)):
        out[at] = special
    return out


def _jittered_walls(steps: Ints, rng: np.random.Generator) -> Floats:
    walls = T0 + steps * STEP_SECONDS + rng.exponential(JITTER_SECONDS, len(steps))
    return np.maximum.accumulate(walls)


def _step_bases(steps: Ints) -> Floats:
    """Where each step's clock read would be without its jitter."""
    return (T0 + steps * STEP_SECONDS).astype(np.float64)


def _event_walls(step_ends: Floats, steps: Ints, tag_index: int,
                 rng: np.random.Generator, info: Information) -> Floats:
    """One ``add_scalar`` call's clock in each step, after the tags called before it."""
    base = step_ends[steps] + tag_index * EVENT_SECONDS
    walls = np.maximum.accumulate(base + rng.exponential(EVENT_SECONDS / 2, len(steps)))
    info.jitter(walls, base, EVENT_SECONDS / 2)
    return walls


def _cosine(steps: Ints, horizon: int) -> Floats:
    return 3e-4 * 0.5 * (1.0 + np.cos(np.pi * steps / horizon))


def _tensorboard(length: int, rng: np.random.Generator, info: Information) -> list[Series]:
    s = np.arange(length, dtype=np.int64)
    loss_mean = 2.5 * np.exp(-s / 30_000) + 0.1
    loss = _widened(loss_mean + rng.normal(0, 0.05, length))
    nan32 = _nan32(0x7FC00123)  # a float32 NaN with a payload
    accuracy_mean = 0.95 - 0.85 * np.exp(-s / 20_000)
    accuracy = _widened(np.clip(accuracy_mean + rng.normal(0, 0.02, length), 0, 1))
    every10 = s * 10
    eval_mean = 2.5 * np.exp(-every10 / 30_000) + 0.15
    eval_loss = _widened(eval_mean + rng.normal(0, 0.02, length))
    grad_norm = _widened(rng.lognormal(0.0, 0.5, length))
    for kept, mean, sigma in ((loss, loss_mean, 0.05), (accuracy, accuracy_mean, 0.02),
                              (eval_loss, eval_mean, 0.02)):
        info.gaussian(kept, mean, sigma, float32=True)
    info.lognormal(grad_norm, 0.5, float32=True)
    columns = {
        "train/loss": (s, _with_specials(loss, nan32)),
        "train/accuracy": (s, accuracy),
        "train/lr": (s, _widened(_cosine(s, length))),
        "train/grad_norm": (s, grad_norm),
        "eval/loss": (every10, eval_loss),
    }
    ends = np.arange(10 * length, dtype=np.int64)
    step_ends = _jittered_walls(ends, rng)
    read = (ends < length) | (ends % 10 == 0)  # the step ends some tag's clock read follows
    info.jitter(step_ends[read], _step_bases(ends[read]), JITTER_SECONDS)
    return [Series(tag, steps, _event_walls(step_ends, steps, i, rng, info), values)
            for i, (tag, (steps, values)) in enumerate(columns.items())]


def _epoch_mean(values: Floats, epoch: int) -> Floats:
    """An ``AverageMeter``'s running mean, reset each epoch, in float64."""
    out = np.empty_like(values)
    for start in range(0, len(values), epoch):
        piece = values[start:start + epoch]
        out[start:start + epoch] = np.cumsum(piece) / np.arange(1, len(piece) + 1)
    return out


def _jsonl(length: int, rng: np.random.Generator, info: Information, *,
           read_rounds: bool) -> list[Series]:
    s = np.arange(length, dtype=np.int64)
    written = _jittered_walls(s, rng)
    loss_mean = 2.5 * np.exp(-s / 30_000) + 0.1
    loss = _widened(loss_mean + rng.normal(0, 0.05, length))
    info.gaussian(loss, loss_mean, 0.05, float32=True)
    durations = np.diff(written, prepend=written[0] - STEP_SECONDS)
    throughput = _with_specials(8192 / np.maximum(durations, 1e-3),
                                _nan64(0x7FF8000000000ABC))
    if read_rounds:  # every line read in a round gets the round's read time
        lines = int(READ_ROUND_SECONDS / STEP_SECONDS)
        reads = T0 + np.arange(length // lines + 1) * READ_ROUND_SECONDS
        bases = reads
        reads = reads + rng.exponential(JITTER_SECONDS, len(reads))
        used = np.unique(s // lines + 1)
        info.jitter(reads[used], bases[used], JITTER_SECONDS)
        walls = reads[s // lines + 1]
    else:
        info.jitter(written, _step_bases(s), JITTER_SECONDS)
        walls = written
    columns = {"loss": loss, "loss_avg": _epoch_mean(loss, 1_000), "lr": _cosine(s, length),
               "tokens_per_s": throughput, "epoch": s / 1_000}
    return [Series(tag, s, walls, values) for tag, values in columns.items()]


def _constant(length: int, rng: np.random.Generator, info: Information) -> list[Series]:
    s = np.arange(length, dtype=np.int64)
    bases = T0 + np.arange(length // CHUNK) * 100.0
    reads = bases + rng.exponential(1.0, length // CHUNK)
    info.jitter(reads, bases, 1.0)
    walls = reads[s // CHUNK]
    constants = {"a": 0.0, "b": 1.0, "c": float(np.float32(3e-4)), "d": 0.1, "e": 42.0}
    return [Series(tag, s, walls, np.full(length, value)) for tag, value in constants.items()]


MAKERS: dict[str, Callable[[int, np.random.Generator, Information], list[Series]]] = {
    "tensorboard": _tensorboard,
    "jsonl-time": lambda n, rng, info: _jsonl(n, rng, info, read_rounds=False),
    "jsonl-read": lambda n, rng, info: _jsonl(n, rng, info, read_rounds=True),
    "constant": _constant,
}


def corpus(kind: str, points: int, info: Information | None = None) -> list[Chunk]:
    """``points`` points (rounded down to whole batches) of ``kind``, batch by batch;
    ``info`` counts the information of its random draws (``information``)."""
    length = points // (CHUNK * TAGS) * CHUNK
    series = MAKERS[kind](length, np.random.default_rng(SEED), info or Information())
    return [Chunk(c.tag, b, c.steps[b * CHUNK:(b + 1) * CHUNK].copy(),
                  c.walls[b * CHUNK:(b + 1) * CHUNK].copy(),
                  c.values[b * CHUNK:(b + 1) * CHUNK].copy())
            for b in range(length // CHUNK) for c in series]


def specials() -> Chunk:
    """A chunk of every value that must survive bit for bit, for the round-trip check."""
    patterns = [0x7FF8000000000000, 0x7FF8000000000ABC, 0xFFF8000000000001,  # quiet NaNs
                0x7FF0000000000001,  # a signalling NaN
                0x7FF0000000000000, 0xFFF0000000000000, 0x8000000000000000, 0,  # ±inf, ±0
                0x0000000000000001, 0x7FEFFFFFFFFFFFFF, 0x3FF0000000000000]  # subnormal, max, 1
    values = np.array(patterns * 10, dtype=np.uint64).view(np.float64)
    n = len(values)
    steps = np.cumsum(np.arange(n, dtype=np.int64) % 3 - 1) + 2**40
    walls = np.full(n, T0)
    walls[n // 2:] = np.nextafter(T0, np.inf)
    return Chunk("specials", 0, steps, walls, values)
