"""Candidate encodings of a curve chunk's columns (steps, wall times, values): bytes per
point on disk and encode/decode speed, to pick one (issue 34).

    uv run python bench/chunk_codecs.py [--points 1000000] [--repeat 3] [--kinds tensorboard,…]

Corpora (``bench/codecs/corpus.py``, numpy, seed fixed): ``points`` points of each kind,
five tags, chunks of 2,000 points (a batch of 10,000 holds one chunk of each tag):

- ``tensorboard``: float32 values widened (loss with NaN/±inf/-0.0, accuracy, cosine lr,
  lognormal grad norm; eval loss every 10 steps), regular steps, wall times of each
  ``add_scalar`` (a step every 50 ms, 1 ms jitter; tags 10 µs apart);
- ``jsonl-time``: what a script computes (float32 loss widened, the epoch's running mean
  and a throughput in full float64, a float64 cosine lr, the fractional epoch), each
  line's ``time.time()``;
- ``jsonl-read``: the same values read at once per round (``walls_read``: runs of 20
  equal wall times);
- ``constant``: constant values, regular steps, one wall time per batch.

Candidates; every decodable one must give back each column bit for bit (``.view(uint64)``
compared), on the corpus and on a chunk of NaN payloads, ±inf, ±0 and subnormals:

- ``before 0037``: PostgreSQL's own arrays (bigint[], float8[], lz4), as chunks were stored
  before packed blobs; encode is the projector's ``pgbinary``, decode ``received`` of
  ``array_send``'s bytes (PostgreSQL's lz4 decompression and ``array_send`` not timed);
- ``stored: packed blob (0037)``: what the projector stores now, through its own COPY into
  a table made ``LIKE readmodel.curve_chunks`` (``tuneplane.common.chunks``' blob; segment
  summaries as arrays): the figure of record;
- ``raw``: each column's bytes, zstd;
- ``planes``: ``bench/codecs/planes.py``: steps delta-of-delta, wall times delta of their
  bits, values as float32 bits when exact, then ``split``/``xor``/``delta``/``dod`` (``v:``;
  ``auto``: chosen per chunk by a bit estimate), zig-zag, the non-zero byte planes each
  compressed (``1 frame``: together): zstd from the ``zstandard`` package (reused
  contexts), or ``(pa)``: pyarrow's zstd or lz4 (no new dependency, but a new zstd
  context every call: ~26 µs, most of a small chunk's decode); ``1 blob a row``: the
  row's columns and segments in one ``bytea`` (one TOAST value);
- ``gorilla``: Facebook's Gorilla, size only (a bit-at-a-time decoder);
- ``parquet``: one file per chunk, DELTA_BINARY_PACKED steps, BYTE_STREAM_SPLIT floats,
  zstd (its footer included).

Columns: bytes per point of the steps, wall times and values as stored; ``segs`` the
segment summaries (the arrays as PostgreSQL stores them, for the two stored forms; for the
others the same summaries encoded as ``planes zstd3``); ``rest`` what else the table holds
(summary columns, row headers, TOAST chunk headers, both indexes); ``total`` PostgreSQL's
``pg_total_relation_size`` of a scratch table of the corpus over its points (goal ≤ 4).
Speeds, in millions of points a second, the median of ``--repeat`` passes over the
corpus: ``enc`` and ``dec`` in Python alone; ``read`` one query for all the chunks' point
columns from the scratch table (before 0037: ``array_send`` as the web's chunk query
asked, so PostgreSQL decompresses lz4 and sends 12 bytes an element) and their decoding.
After each corpus, the information of its random draws under the model that drew them
(``bench/codecs/information.py``: what no lossless encoding can go below), and estimates:
wall times stored once per batch for the tags that share the steps (each other tag's as
the difference from them) or rounded to 1 µs or 1 ms (lossy), and the segments' share.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.codecs import gorilla, packed, parquet, today
from bench.codecs.compressors import ArrowCompressor, Compressor, ZstdCompressor, zstandard
from bench.codecs.corpus import KINDS, Chunk, Floats, Ints, corpus, specials
from bench.codecs.information import Information
from bench.codecs.planes import PlaneCodec, encode_ints, pack, to_planes
from bench.codecs.raw import RawCodec
from bench.codecs.segments import encoded_segments
from bench.codecs.store import Scratch, Stored, scratch
from tuneplane.common.chunks.planes import DELTA, DOD, zigzag

Blobs = tuple[bytes, ...]
Columns = tuple[Ints, Floats, Floats]
GOAL = 4.0
#: The segments' and the shared walls' compressor (the sizes do not depend on the library).
ZSTD3: Compressor = ZstdCompressor(3) if zstandard else ArrowCompressor("zstd", 3)


def lengths(blobs: Blobs) -> tuple[int, int, int]:
    return len(blobs[0]), len(blobs[1]), len(blobs[2])


def parquet_split(blobs: Blobs) -> tuple[int, int, int]:
    return parquet.column_sizes(blobs[0])


@dataclass(frozen=True, slots=True)
class Candidate:
    name: str
    encode: Callable[[Chunk], Blobs]
    decode: Callable[[Blobs, int], Columns] | None  # None: size only
    split: Callable[[Blobs], tuple[int, int, int]] = lengths
    repeat: int | None = None  # passes timed (None: --repeat)
    one_blob: bool = False  # stored as one bytea a row, segments included


def candidates() -> list[Candidate]:
    """Today's, then the others; the ``zstandard`` ones only when it is installed."""
    every = ("split", "xor", "delta", "dod")
    arrow_zstd3 = ArrowCompressor("zstd", 3)
    best = PlaneCodec(arrow_zstd3, every)
    planes: list[PlaneCodec] = []
    if zstandard is not None:
        zstd = {level: ZstdCompressor(level) for level in (1, 3, 9)}
        best = PlaneCodec(zstd[3], every)
        planes += [PlaneCodec(zstd[3], (mode,)) for mode in every[:3]]
        planes += [PlaneCodec(zstd[1], every), best, PlaneCodec(zstd[9], every)]
    planes += [PlaneCodec(arrow_zstd3, every), PlaneCodec(arrow_zstd3, every, per_plane=False),
               PlaneCodec(ArrowCompressor("lz4"), every)]
    raw = RawCodec(arrow_zstd3)
    return [Candidate("before 0037 (PG arrays, lz4)", today.encode, today.decode),
            Candidate(packed.NAME, packed.encode, packed.decode, packed.split),
            Candidate(raw.name, raw.encode, raw.decode),
            *(Candidate(p.name, p.encode, p.decode) for p in planes),
            Candidate(f"{best.name}, 1 blob a row", best.encode, best.decode, one_blob=True),
            Candidate("gorilla (size only)", gorilla.encode, None, repeat=1),
            Candidate("parquet BSS+DBP zstd3", lambda c: (parquet.encode(c), b"", b""),
                      lambda b, n: parquet.decode(b[0]), parquet_split)]


def exact(chunk: Chunk, columns: Columns) -> bool:
    expected = (chunk.steps, chunk.walls, chunk.values)
    return all(got.dtype == want.dtype and len(got) == len(want)
               and np.array_equal(got.view(np.uint64), want.view(np.uint64))
               for got, want in zip(columns, expected, strict=True))


def median_seconds(run: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


@dataclass(frozen=True, slots=True)
class Row:
    name: str
    split: tuple[float, float, float]  # bytes per point: steps, walls, values
    segments: float | None
    total: float | None
    encode: float  # M points/s
    decode: float | None
    read: float | None  # from PostgreSQL and decoded


def measured(candidate: Candidate, chunks: Sequence[Chunk], repeat: int
             ) -> tuple[list[Blobs], float, float | None]:
    """The candidate's blobs, and its encode and decode speeds (M points/s)."""
    points = sum(map(len, chunks))
    blobs: list[Blobs] = []

    def encode_all() -> None:
        blobs[:] = [candidate.encode(c) for c in chunks]

    passes = candidate.repeat or repeat
    encode = points / median_seconds(encode_all, passes) / 1e6
    decoder = candidate.decode
    if decoder is None:
        return blobs, encode, None
    decoded: list[Columns] = []

    def decode_all() -> None:
        decoded[:] = [decoder(b, len(c)) for b, c in zip(blobs, chunks, strict=True)]

    decode = points / median_seconds(decode_all, passes) / 1e6
    wrong = [i for i, (c, d) in enumerate(zip(chunks, decoded, strict=True)) if not exact(c, d)]
    if wrong:
        raise AssertionError(f"{candidate.name}: chunks {wrong[:5]} not bit-exact")
    return blobs, encode, decode


def check_specials(all_candidates: Sequence[Candidate]) -> None:
    chunk = specials()
    for candidate in all_candidates:
        if candidate.decode is not None and not exact(
                chunk, candidate.decode(candidate.encode(chunk), len(chunk))):
            raise AssertionError(f"{candidate.name}: special values not bit-exact")


def shared_walls(chunks: Sequence[Chunk]) -> tuple[int, int]:
    """Wall-time bytes per chunk (``planes zstd3``), and when a batch stores its first
    chunk's so and each other chunk with the same steps as the difference from them
    (zig-zag, byte planes, zstd3; an estimate: no such layout exists yet)."""
    codec = PlaneCodec(ZSTD3, ("split",))
    alone = shared = 0
    first: dict[int, Chunk] = {}
    for chunk in chunks:
        own = len(codec.encode(chunk)[1])
        alone += own
        reference = first.setdefault(chunk.batch, chunk)
        if reference is chunk or not np.array_equal(reference.steps, chunk.steps):
            shared += own
            continue
        difference = chunk.walls.view(np.uint64) - reference.walls.view(np.uint64)
        shared += 2 + sum(len(pack(ZSTD3, p)) + 4 for p in to_planes(zigzag(difference)))
    return alone, shared


def values_by_tag(chunks: Sequence[Chunk]) -> dict[str, float]:
    """Value bytes per point of each tag under ``planes zstd3 v:auto``."""
    codec = PlaneCodec(ZSTD3, ("split", "xor", "delta", "dod"))
    stored: dict[str, list[int]] = {}
    for chunk in chunks:
        sizes = stored.setdefault(chunk.tag, [0, 0])
        sizes[0] += len(codec.encode(chunk)[2])
        sizes[1] += len(chunk)
    return {tag: size / points for tag, (size, points) in stored.items()}


def walls_in_ticks(chunks: Sequence[Chunk], tick: float) -> int:
    """Wall-time bytes if they were rounded to ``tick`` seconds (lossy: an estimate)."""
    return sum(len(encode_ints(np.round(c.walls / tick).astype(np.int64), (DELTA, DOD), ZSTD3))
               for c in chunks)


async def corpus_rows(kind: str, points: int, repeat: int, db: Scratch | None,
                      all_candidates: Sequence[Candidate]) -> tuple[list[Row], list[str]]:
    info = Information()
    chunks = corpus(kind, points, info)
    n = sum(map(len, chunks))
    walls_read = kind == "jsonl-read"
    segments = [encoded_segments(c, ZSTD3) for c in chunks]
    segment_bytes = sum(len(s) for s in segments if s is not None)
    rows = []
    today_stored: Stored | None = None
    for candidate in all_candidates:
        blobs, encode, decode = measured(candidate, chunks, repeat)
        split = np.sum([candidate.split(b) for b in blobs], axis=0) / n
        segs = segment_bytes / n
        stored: Stored | None = None
        if db is not None and candidate.decode is today.decode:
            stored = today_stored = await db.store_today(chunks, walls_read, today.decode, repeat)
            split = np.array([stored.steps, stored.walls, stored.values]) / n
            segs = stored.segments / n
        elif db is not None and candidate.decode is packed.decode:
            stored = await db.store_packed(chunks, walls_read, packed.decode, repeat)
            segs = stored.segments / n
        elif db is not None:
            stored = await db.store_blobs(chunks, blobs, segments, walls_read, candidate.decode,
                                          repeat, candidate.one_blob)
        total = None if stored is None else stored.total / n
        read = None if stored is None or stored.read is None else n / stored.read / 1e6
        rows.append(Row(candidate.name, (split[0], split[1], split[2]), segs, total, encode,
                        decode, read))
    alone, shared = shared_walls(chunks)
    micro, milli = (walls_in_ticks(chunks, tick) / n for tick in (1e-6, 1e-3))
    notes = [f"walls (per chunk {alone / n:.3f} B/pt) once per batch, the other tags' as "
             f"differences: {shared / n:.3f}; lossy, rounded to 1 µs "
             f"{micro:.3f}, to 1 ms {milli:.3f} (estimates, planes zstd3)"]
    tags = ", ".join(f"{tag} {b:.2f}" for tag, b in values_by_tag(chunks).items())
    notes.append(f"values by tag (planes zstd3 v:auto): {tags}")
    if today_stored is not None:
        notes.append(f"segments: as arrays {today_stored.segments / n:.3f} B/pt in PostgreSQL, "
                     f"encoded {segment_bytes / n:.3f}; derivable at read time from the "
                     f"decoded points (seg_counts from n alone)")
    values, walls = (info.bits[part] / 8 / n for part in ("values", "walls"))
    notes.append(f"information of the corpus's random draws, the floor of any lossless "
                 f"encoding: values {values:.3f} + walls {walls:.3f} = {values + walls:.3f} "
                 f"B/pt, leaving {GOAL - values - walls:.3f} of the goal's {GOAL:g} for steps, "
                 f"segments, rows, TOAST, indexes and the codec's excess over the model")
    return rows, notes


def fmt(value: float | None, width: int = 6, digits: int = 3) -> str:
    return f"{'n/a':>{width}}" if value is None else f"{value:>{width}.{digits}f}"


def print_table(kind: str, points: int, rows: Sequence[Row], notes: Sequence[str]) -> None:
    print(f"\n{kind}: {points:,} points, chunks of 2,000 (bytes per point; M points/s)")
    print(f"{'candidate':<40} {'steps':>6} {'walls':>6} {'values':>6} {'segs':>6} "
          f"{'rest':>6} {'total':>6} {'<=4':>4} {'enc':>6} {'dec':>6} {'read':>6}")
    for r in rows:
        parts = sum(r.split) + (r.segments or 0.0)
        rest = None if r.total is None else r.total - parts
        meets = "" if r.total is None else ("yes" if r.total <= GOAL else "no")
        print(f"{r.name:<40} {fmt(r.split[0])} {fmt(r.split[1])} {fmt(r.split[2])} "
              f"{fmt(r.segments)} {fmt(rest)} {fmt(r.total)} {meets:>4} "
              f"{fmt(r.encode, 6, 1)} {fmt(r.decode, 6, 1)} {fmt(r.read, 6, 1)}")
    for note in notes:
        print(f"  {note}")


async def main(points: int, repeat: int, kinds: Sequence[str]) -> None:
    all_candidates = candidates()
    check_specials(all_candidates)
    url = os.environ.get("TUNEPLANE_DATABASE_URL")
    if url is None:
        print("TUNEPLANE_DATABASE_URL unset: no PostgreSQL sizes (`source /tmp/envs.sh`)")
        for kind in kinds:
            rows, notes = await corpus_rows(kind, points, repeat, None, all_candidates)
            print_table(kind, points, rows, notes)
        return
    async with scratch(url) as db:
        for kind in kinds:
            rows, notes = await corpus_rows(kind, points, repeat, db, all_candidates)
            print_table(kind, points, rows, notes)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--points", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--kinds", default=",".join(KINDS))
    args = parser.parse_args()
    asyncio.run(main(args.points, args.repeat, args.kinds.split(",")))
