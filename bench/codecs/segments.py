"""A chunk's row as the projector makes it (summaries and segment summaries), and its
segment summaries encoded as the points are (byte planes, zstd), for their cost.

The encoded segments keep first and last steps (``dod``), minimums and maximums (NaN for
"no finite value", which a minimum never is otherwise), last values and their wall times;
``seg_counts`` are left out: ``projection.segments`` derives them from ``n`` alone.
"""

from __future__ import annotations

import struct

import numpy as np

from bench.codecs.compressors import Compressor
from bench.codecs.corpus import Chunk
from bench.codecs.planes import MODES, encode_floats, encode_ints
from tuneplane.common.chunks.planes import DELTA, DOD
from tuneplane.projector.projection import ChunkRow, finite_range, segments

_VALUE_MODES = tuple(MODES.values())


def chunk_row(chunk: Chunk, walls_read: bool, index: int = 0) -> ChunkRow:
    """The projector's row for ``chunk`` (``projection.summarise`` without the protobuf)."""
    v_min, v_max = finite_range(chunk.values)
    return ChunkRow(source="bench", run_path="", tag=chunk.tag, chunk_index=index,
                    steps=chunk.steps, wall_times=chunk.walls, values=chunk.values,
                    step_min=int(chunk.steps.min()), step_max=int(chunk.steps.max()),
                    v_min=v_min, v_max=v_max, v_first=float(chunk.values[0]),
                    v_last=float(chunk.values[-1]), w_first=float(chunk.walls[0]),
                    w_last=float(chunk.walls[-1]),
                    segments=segments(chunk.steps, chunk.walls, chunk.values),
                    walls_read=walls_read)


def encoded_segments(chunk: Chunk, compressor: Compressor) -> bytes | None:
    """The segment summaries as one blob of length-prefixed columns (None: no segments)."""
    s = segments(chunk.steps, chunk.walls, chunk.values)
    if s is None:
        return None
    bounds = [np.array([np.nan if v is None else v for v in side], dtype=np.float64)
              for side in (s.mins, s.maxs)]
    columns = [encode_ints(s.first_steps, (DOD,), compressor),
               encode_ints(s.last_steps, (DOD,), compressor),
               *(encode_floats(b, _VALUE_MODES, compressor) for b in bounds),
               encode_floats(s.lasts, _VALUE_MODES, compressor),
               encode_floats(s.last_walls, (DELTA,), compressor)]
    return b"".join(struct.pack("<I", len(c)) + c for c in columns)
