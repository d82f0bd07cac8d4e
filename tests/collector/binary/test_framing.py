"""TFRecord framing, from outside the binary: the tests' writer frames records as
TensorBoard's own writer does, and an event file written in pieces cut anywhere (inside a
record's header, data or CRC) is read by the collector, restarted after each piece, every
record once and in order, with no damage said of a record still being written. (Scanning
arbitrary bytes, damage and resynchronisation are the Rust unit tests of
``sources/tensorboard/framing.rs``.)"""

from __future__ import annotations

import io
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from tensorboard.compat.proto import event_pb2, summary_pb2
from tensorboard.summary.writer.record_writer import RecordWriter

from tests.collector.binary.collected import collect
from tests.support.collector_binary import spooled
from tests.support.truth import frame


@given(st.binary(max_size=2000))
def test_frame_is_tensorboards_record_framing(record: bytes) -> None:
    sink = io.BytesIO()
    RecordWriter(sink).write(record)
    assert frame(record) == sink.getvalue()


def scalar(step: int) -> bytes:
    return frame(event_pb2.Event(step=step, wall_time=1.0 + step, summary=summary_pb2.Summary(
        value=[summary_pb2.Summary.Value(tag="loss", simple_value=step / 4)]),
    ).SerializeToString())


def test_a_file_written_in_pieces_cut_anywhere_is_read_once_in_order(tmp_path: Path,
                                                                     tls_dir: Path) -> None:
    logdir = tmp_path / "logs"
    logdir.mkdir()
    records = [scalar(s) for s in range(40)]
    data = b"".join(records)
    ends = [sum(len(r) for r in records[:i + 1]) for i in range(len(records))]
    # Inside the 3rd record's length, its length CRC, its data, its data CRC; then the end.
    cuts = [ends[1] + 3, ends[9] + 10, ends[20] + 30, ends[30] - 2, len(data)]
    path = logdir / "events.out.tfevents.1"
    path.write_bytes(b"")
    said = ""
    for cut in cuts:
        with path.open("ab") as out:
            out.write(data[path.stat().st_size:cut])
        complete = max(end for end in [0, *ends] if end <= cut)
        said += collect(tmp_path, tls_dir, {("tb", path.name): complete},
                        "--tensorboard", f"tb={logdir}").stderr
    steps = [s for b in spooled(tmp_path / "spool") for c in b.chunks for s in c.steps]
    assert steps == list(range(40))
    assert f"{path.name}@" not in said, said
