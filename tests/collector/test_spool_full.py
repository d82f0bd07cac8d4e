"""A full spool pauses reading; the source keeps the data; reading resumes with nothing lost."""

from __future__ import annotations

import time
from pathlib import Path

from tests.support.truth import write_jsonl
from tuneplane.collector.reader import SourceReader, SourceSpec
from tuneplane.collector.spool import Spool
from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1.identity import MemberKey

OWNER = MemberKey("run", 1, "rank-0")


def test_reading_pauses_at_the_cap_and_resumes_after_acks(tmp_path: Path) -> None:
    truth = write_jsonl(tmp_path / "m.jsonl", range(5000), ["loss"])
    spool = Spool(tmp_path / "spool", OWNER)
    reader = SourceReader(spool, [SourceSpec("train", tmp_path / "m.jsonl")], max_points=500,
                          max_bytes=1 << 20, spool_bytes=20_000, clock=time.time)
    delivered: dict[tuple[str, int], float] = {}
    pauses = 0
    while True:
        idle = reader.run_once()
        if reader.spool_full():
            pauses += 1
            assert not idle
            stored = spool.stored_bytes()
            assert reader.run_once() is False  # paused: nothing more is sealed
            assert spool.stored_bytes() == stored
            for batch in spool.pending():  # the sender catches up
                for chunk in pb.Batch.FromString(batch.payload).chunks:
                    delivered.update(((chunk.tag, s), v) for s, v in
                                     zip(chunk.steps, chunk.values, strict=True))
                spool.acknowledge(batch.sequence)
        elif idle:
            break
    for batch in spool.pending():
        for chunk in pb.Batch.FromString(batch.payload).chunks:
            delivered.update(((chunk.tag, s), v) for s, v in
                             zip(chunk.steps, chunk.values, strict=True))
    assert pauses >= 3
    assert delivered == truth
