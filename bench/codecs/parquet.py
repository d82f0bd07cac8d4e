"""A chunk as one small Parquet file (pyarrow): steps DELTA_BINARY_PACKED, wall times and
values BYTE_STREAM_SPLIT, zstd, no dictionary, no statistics. Its size includes the
footer (schema, row group and column metadata): a fixed cost per chunk."""

from __future__ import annotations

import io

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from bench.codecs.corpus import Chunk, Floats, Ints

_ENCODINGS = {"steps": "DELTA_BINARY_PACKED", "walls": "BYTE_STREAM_SPLIT",
              "values": "BYTE_STREAM_SPLIT"}


def encode(chunk: Chunk, level: int = 3) -> bytes:
    table = pa.table({"steps": chunk.steps, "walls": chunk.walls, "values": chunk.values})
    sink = io.BytesIO()
    pq.write_table(table, sink, compression="zstd", compression_level=level,
                   use_dictionary=False, column_encoding=_ENCODINGS, write_statistics=False,
                   store_schema=False)
    return sink.getvalue()


def column_sizes(data: bytes) -> tuple[int, int, int]:
    """The stored bytes of each column's chunk (the rest of the file is metadata)."""
    group = pq.ParquetFile(io.BytesIO(data)).metadata.row_group(0)
    sizes = [group.column(i).total_compressed_size for i in range(3)]
    return sizes[0], sizes[1], sizes[2]


def decode(data: bytes) -> tuple[Ints, Floats, Floats]:
    table = pq.read_table(pa.BufferReader(data))
    columns = [np.asarray(table.column(name).to_numpy()) for name in ("steps", "walls", "values")]
    return columns[0], columns[1], columns[2]
