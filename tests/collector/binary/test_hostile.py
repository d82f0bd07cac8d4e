"""What a hostile training job writes, against the binary: a record no batch can hold is
passed over unread, a summary of millions of values is refused before it is decoded, an
artifact is read only as a small regular file outside the fenced directories, a file name
cannot forge a log line, and SIGTERM ends the collector within its drain time whatever a
channel's schema costs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

from tensorboard.compat.proto import event_pb2, summary_pb2

from tests.support.collector_binary import command, run, unreachable_run
from tests.support.truth import frame

HOST = "x86_64-unknown-linux-musl"


def scalar_event(step: int, tag: str = "loss") -> bytes:
    value = summary_pb2.Summary.Value(tag=tag, simple_value=step / 2)
    return frame(event_pb2.Event(step=step, wall_time=1.0,
                                 summary=summary_pb2.Summary(value=[value])).SerializeToString())


def status(spool: Path) -> dict[str, object]:
    shown: dict[str, object] = json.loads(run(HOST, "spool", "status", str(spool)).stdout)
    return shown


def test_a_record_over_the_batch_bound_is_passed_over_unread(tmp_path: Path,
                                                             tls_dir: Path) -> None:
    logdir = tmp_path / "tb"
    logdir.mkdir()
    events = logdir / "events.out.tfevents.1.big"
    # 8 MiB of one record (a summary of one huge text tensor), between two good ones.
    huge = event_pb2.Event(step=2, summary=summary_pb2.Summary(value=[summary_pb2.Summary.Value(
        tag="blob", tensor={"dtype": 7, "string_val": [b"x" * (8 << 20)]})]))
    events.write_bytes(scalar_event(1) + frame(huge.SerializeToString()) + scalar_event(3))
    marker = tmp_path / "m.jsonl"
    marker.write_text('{"step": 1, "wall_time": 1, "metrics": {"x": 1}}\n')
    done = unreachable_run(HOST, tmp_path, tls_dir, {"m": marker}, "--tensorboard",
                           f"tb={logdir}", read=[marker, events])
    assert done.returncode == 3, done.stderr
    offset = len(scalar_event(1))
    assert f"events.out.tfevents.1.big@{offset}: record of {huge.ByteSize()} bytes is over " \
           "the 3145728 byte batch bound; skipped" in done.stderr
    assert "3 points and 0 rich records read" in done.stderr  # both scalars, and m's
    rejected = status(tmp_path / "spool")["rejected"]
    assert rejected == [{"source": "tb", "reason": "over the batch bound", "count": 1}]


def test_a_summary_of_millions_of_values_is_refused_before_it_is_decoded(tmp_path: Path) -> None:
    many = event_pb2.Event(step=1, summary=summary_pb2.Summary(
        value=[summary_pb2.Summary.Value()] * 300_000))
    path = tmp_path / "events.out.tfevents.1.many"
    path.write_bytes(frame(many.SerializeToString()) + scalar_event(2))
    done = subprocess.run(["/usr/bin/time", "-f", "%M", *command(HOST), "read", str(path)],
                          capture_output=True, timeout=60, check=False)
    assert done.returncode == 0
    said = done.stderr.decode().splitlines()
    assert said[0] == (f"{path.name}@0: summary of 300000 values, more than one batch holds "
                       "(50000); skipped")
    assert len(said) == 2  # and GNU time's peak RSS, in KiB
    assert int(said[1]) < 64 * 1024, "decoding it would take a hundred MiB and more"
    assert len(done.stdout.splitlines()) == 1  # the good record after it


def test_an_artifact_is_a_small_regular_file_outside_the_fence(tmp_path: Path) -> None:
    state, work = tmp_path / "state", tmp_path / "work"
    state.mkdir()
    work.mkdir()
    (state / "token").write_text("SECRET-TOKEN-abc123")
    (work / "linked.yaml").symlink_to(state / "token")
    os.mkfifo(work / "fifo.yaml")
    (work / "big.json").write_text(" " * (1 << 20) + "{}")
    (work / "deep.yaml").write_text("sources: " + "[" * 100 + "]" * 100 + "\n")
    base = [*command(HOST), "run", "--run", "r", "--attempt", "1", "--member", "rank-0",
            "--token-file", "t", "--spool", str(tmp_path / "spool"), "--target", "localhost:1",
            "--ca-file", "ca.pem", "--never-read", str(state), "--integration"]
    for name, says in (("linked.yaml", "which sources are never read from"),
                       ("fifo.yaml", "is not a regular file"),
                       ("big.json", "over 1048576 bytes"),
                       ("deep.yaml", "nested deeper than 64 flow collections")):
        done = subprocess.run([*base, str(work / name)], capture_output=True, text=True,
                              timeout=30, check=False)
        assert done.returncode == 2, (name, done.stderr)
        assert says in done.stderr, (name, done.stderr)
        assert "SECRET" not in done.stderr
    assert not (tmp_path / "spool").exists()


def test_a_file_name_cannot_forge_a_log_line(tmp_path: Path, tls_dir: Path) -> None:
    logdir = tmp_path / "tb"
    logdir.mkdir()
    forged = "events.out.tfevents.1\n2026-12-01T00:00:00.000Z INFO tuneplane.collector done"
    (logdir / forged).write_bytes(scalar_event(1) + b"\x00" * 20)  # then damage
    marker = tmp_path / "m.jsonl"
    marker.write_text('{"step": 1, "wall_time": 1, "metrics": {"x": 1}}\n')
    done = unreachable_run(HOST, tmp_path, tls_dir, {"m": marker}, "--tensorboard",
                           f"tb={logdir}")
    assert "events.out.tfevents.1\\x0a2026-12-01T00:00:00.000Z INFO" in done.stderr
    assert not any(line.startswith("2026-12-01T00:00:00.000Z")
                   for line in done.stderr.splitlines())


def test_sigterm_ends_the_collector_within_its_drain_whatever_a_schema_costs(
        tmp_path: Path, tls_dir: Path) -> None:
    depth = 40  # each level doubles the work: 2**40 checks of one record
    definitions: dict[str, object] = {f"d{n}": {"anyOf": [{"$ref": f"#/definitions/d{n + 1}"}] * 2}
                   for n in range(depth)}
    definitions[f"d{depth}"] = {"not": {}}
    schema = {"$ref": "#/definitions/d0", "definitions": definitions}
    channel = tmp_path / "c.jsonl"
    channel.write_text('{"step": 1, "wall_time": 1, "record": {}}\n')
    artifact = tmp_path / "integration.json"
    artifact.write_text(json.dumps({"version": 1, "sources": [
        {"id": "none", "kind": "jsonl", "path": str(tmp_path / "none.jsonl"), "owner": "x"}],
        "channels": [{"id": "c", "path": str(channel), "owner": "rank-0", "schema": schema,
                      "max_record_bytes": 1000, "max_bytes_per_minute": 100000}]}))
    (tmp_path / "token").write_text("t")
    collector = subprocess.Popen(
        [*command(HOST), "run", "--run", "r", "--attempt", "1", "--member", "rank-0",
         "--integration", str(artifact), "--token-file", str(tmp_path / "token"),
         "--spool", str(tmp_path / "spool"), "--target", "localhost:1", "--ca-file",
         str(tls_dir / "ca.pem")], stderr=subprocess.PIPE, text=True,
        env={**os.environ, "TUNEPLANE_TELEMETRY_DRAIN_SECONDS": "1"})
    time.sleep(1.0)  # the reader is inside the record's validation by now
    collector.send_signal(signal.SIGTERM)
    _, stderr = collector.communicate(timeout=30)  # drain 1 s, grace 2 s: far below
    assert collector.returncode == 3, stderr
    assert "reading did not end within the drain time; the collector exits without it" \
        in stderr
