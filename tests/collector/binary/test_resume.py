"""A new spool against an ingest the test scripts: nothing is sent before the member's
checkpoints are known (the sources are read and spooled meanwhile); checkpoints from ingest
resume a file after them, and the batches read again before they came are dropped; an
ingest that does not know GetCheckpoints is said to risk doubles, and is sent to; a proxy's
HTTP 404 on the way, which reads as the same UNIMPLEMENTED, is not taken for one."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import crc32c
import grpc
import pytest

from tests.collector.binary.not_found import not_found_server
from tests.collector.binary.scripted_ingest import collecting, scripted_ingest
from tests.support.collector_binary import HOST_TARGET, run
from tests.support.truth import write_jsonl
from tuneplane.telemetry.v1 import telemetry_pb2 as pb


def status(spool: Path) -> dict[str, Any]:
    done = run(HOST_TARGET, "spool", "status", str(spool))
    shown: dict[str, Any] = json.loads(done.stdout) if done.returncode == 0 else {}
    return shown


def test_nothing_is_sent_before_the_checkpoints_are_known_and_then_everything_is(
        tmp_path: Path, tls_dir: Path) -> None:
    source = tmp_path / "m.jsonl"
    truth = write_jsonl(source, range(2000), ["loss"])
    with scripted_ingest(tls_dir) as ingest:
        ingest.checkpoints_refused = grpc.StatusCode.UNAVAILABLE
        with collecting(ingest, tls_dir, tmp_path, tmp_path / "spool", source,
                        "--max-batch-points", "500") as collector:
            collector.wait_until(lambda: ingest.asked >= 2 and status(tmp_path / "spool").get(
                "resume") == "pending" and bool(status(tmp_path / "spool").get("positions")))
            assert ingest.calls == []  # read and spooled, not sent
            ingest.checkpoints_refused = None
            assert collector.ended(timeout=120) == 0, collector.said()
    said = collector.said()
    assert said.count("nothing is sent before the member's checkpoints are known") >= 1, said
    assert ingest.delivered() == truth
    began = status(tmp_path / "spool")["resume"]
    assert isinstance(began, dict), began
    assert began["checkpoints"] == 0, began


def test_the_drain_asks_for_the_checkpoints_at_once_however_long_the_wait_had_grown(
        tmp_path: Path, tls_dir: Path) -> None:
    """Refused long enough, a new spool waits 15 s between asks; the job's end (SIGTERM)
    cuts that wait short, so a 5 s drain still delivers everything."""
    source = tmp_path / "m.jsonl"
    truth = write_jsonl(source, range(2000), ["loss"])
    with scripted_ingest(tls_dir) as ingest:
        ingest.checkpoints_refused = grpc.StatusCode.UNAVAILABLE
        with collecting(ingest, tls_dir, tmp_path, tmp_path / "spool", source,
                        "--max-batch-points", "500", until_idle=False,
                        env={"TUNEPLANE_TELEMETRY_DRAIN_SECONDS": "5"}) as collector:
            collector.wait_until(lambda: "asked again in 15 s" in collector.said())
            asked = ingest.asked
            ingest.checkpoints_refused = None
            collector.process.send_signal(signal.SIGTERM)
            assert collector.ended(timeout=60) == 0, collector.said()
    assert ingest.asked == asked + 1, collector.said()  # the one ask the drain made
    assert ingest.delivered() == truth


def test_a_checkpoint_resumes_the_file_after_it_and_drops_what_was_read_again(
        tmp_path: Path, tls_dir: Path) -> None:
    source = tmp_path / "m.jsonl"
    truth = write_jsonl(source, range(3000), ["loss"])
    data = source.read_bytes()
    delivered = data.index(b"\n", len(data) // 2) + 1  # an earlier spool's, to a line's end
    lines = data[:delivered].count(b"\n")
    with scripted_ingest(tls_dir) as ingest:
        ingest.checkpoints = pb.GetCheckpointsReply(spool_epochs=["0ld"], positions=[
            pb.SourcePosition(source="train", file="", generation=1, offset=delivered,
                              line=lines + 1,
                              fingerprint=f"1024:{crc32c.crc32c(data[:1024]):08x}")])
        ingest.checkpoints_refused = grpc.StatusCode.UNAVAILABLE
        with collecting(ingest, tls_dir, tmp_path, tmp_path / "spool", source,
                        "--max-batch-points", "500") as collector:
            collector.wait_until(lambda: [p["offset"] for p in status(tmp_path / "spool").get(
                "positions", [])] == [len(data)])
            ingest.checkpoints_refused = None  # the whole file read before the answer
            assert collector.ended(timeout=120) == 0, collector.said()
    sent = [(chunk.tag, s) for call in ingest.calls if call.answer.acked
            for chunk in call.batch.chunks for s in chunk.steps]
    assert len(sent) == len(set(sent))  # nothing twice
    assert sorted(sent) == sorted(key for key in truth if key[1] >= lines)  # only the rest
    began = status(tmp_path / "spool")["resume"]
    assert isinstance(began, dict), began
    assert (began["resumed"], began["gaps"], began["earlier_epochs"]) == (1, 0, ["0ld"])
    assert began["dropped_batches"] > 0  # what it had read before the answer


def test_a_checkpoint_without_a_fingerprint_does_not_resume_the_file_there(
        tmp_path: Path, tls_dir: Path) -> None:
    """A checkpoint past a file's start that holds no fingerprint cannot say which file it
    was read from: the file there now is read from its start (points may be stored twice,
    never lost) and the gap is said, rather than resumed at an offset of another file."""
    source = tmp_path / "m.jsonl"
    truth = write_jsonl(source, range(3000), ["loss"])
    data = source.read_bytes()
    offset = data.index(b"\n", len(data) // 2) + 1
    with scripted_ingest(tls_dir) as ingest:
        ingest.checkpoints = pb.GetCheckpointsReply(spool_epochs=["0ld"], positions=[
            pb.SourcePosition(source="train", file="", generation=1, offset=offset,
                              line=data[:offset].count(b"\n") + 1, fingerprint="")])
        with collecting(ingest, tls_dir, tmp_path, tmp_path / "spool", source,
                        "--max-batch-points", "500") as collector:
            assert collector.ended(timeout=120) == 0, collector.said()
    assert ingest.delivered() == truth  # the whole file, from its start
    began = status(tmp_path / "spool")["resume"]
    assert isinstance(began, dict), began
    assert (began["resumed"], began["gaps"]) == (0, 1), began
    said = collector.said()
    assert f"an earlier spool read it to byte {offset} (generation 1), and its checkpoint " \
           "holds no fingerprint of the file" in said, said


def test_an_ingest_that_does_not_know_get_checkpoints_is_said_to_risk_doubles_and_sent_to(
        tmp_path: Path, tls_dir: Path) -> None:
    source = tmp_path / "m.jsonl"
    truth = write_jsonl(source, range(2000), ["loss"])
    with scripted_ingest(tls_dir) as ingest:
        ingest.checkpoints_refused = grpc.StatusCode.UNIMPLEMENTED
        with collecting(ingest, tls_dir, tmp_path, tmp_path / "spool", source,
                        "--max-batch-points", "500") as collector:
            assert collector.ended(timeout=120) == 0, collector.said()
    assert ingest.asked == 1
    assert ingest.delivered() == truth
    said = collector.said()
    assert "ingest does not answer GetCheckpoints (it is older than this collector)" in said


@pytest.mark.parametrize("body", [b"", b"<html><body>404 Not Found</body></html>"])
def test_a_proxys_404_is_not_taken_for_an_ingest_without_checkpoints(
        tmp_path: Path, tls_dir: Path, body: bytes) -> None:
    """A gateway misrouted on the way answers HTTP 404: the new spool stays pending, asking
    again, and sends nothing (settled with no checkpoints, it would send again what an
    earlier spool of the member delivered)."""
    source = tmp_path / "m.jsonl"
    write_jsonl(source, range(2000), ["loss"])
    with not_found_server(tls_dir, body) as proxy, collecting(
            proxy, tls_dir, tmp_path, tmp_path / "spool", source, "--max-batch-points", "500",
            until_idle=False) as collector:
        collector.wait_until(lambda: len(proxy.requests) >= 2
                             and "asked again in" in collector.said())
        shown = status(tmp_path / "spool")
        assert shown.get("resume") == "pending", shown
        assert bool(shown.get("positions")), shown  # read and spooled meanwhile
        collector.process.send_signal(signal.SIGKILL)
    assert set(proxy.requests) == {"/tuneplane.telemetry.v1.TelemetryIngest/GetCheckpoints"}
    said = collector.said()
    assert "older than this collector" not in said, said
    if not body:  # read as UNIMPLEMENTED, and said to be no answer of ingest's
        assert "UNIMPLEMENTED" in said, said
        assert "not ingest's answer" in said, said
