"""How the binary's sender answers each kind of reply, on the wire, against an ingest the
test scripts: overload, outage and token refusals are sent again later, byte for byte the
same batch, and so are answers ingest never gives a batch; ingest's refusal is quarantined
with its reason and the rest goes on; DUPLICATE_SAFE is an ACK; the token file is read
again for every send; and a spool left by one collector is sent by the next with its
identities and bytes unchanged."""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import subprocess
from pathlib import Path

import grpc
import pytest

from tests.collector.binary.scripted_ingest import Answer, scripted_ingest
from tests.support.collector_binary import HOST_TARGET, spool_status, unreachable_run
from tests.support.processes import collector_args, run_collector
from tests.support.truth import write_jsonl
from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1.identity import MemberKey

MEMBER = MemberKey("r", 1, "rank-0")


def args(port: int, tls_dir: Path, tmp_path: Path, *extra: str) -> list[str]:
    """``run`` of MEMBER reading ``tmp_path/m.jsonl`` in batches of 100 points, its token
    ``tmp_path/token`` (token-1 unless written already)."""
    token = tmp_path / "token"
    if not token.exists():
        token.write_text("token-1\n")
    return collector_args(port, tls_dir, token, MEMBER, tmp_path / "spool",
                          {"train": tmp_path / "m.jsonl"}, "--max-batch-points", "100", *extra)


def test_overload_outage_and_token_refusals_are_resent_byte_for_byte(
        tmp_path: Path, tls_dir: Path) -> None:
    truth = write_jsonl(tmp_path / "m.jsonl", range(400), ["loss"])  # 4 batches
    refusals = (grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.UNAVAILABLE,
                grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.UNAUTHENTICATED)
    with scripted_ingest(tls_dir) as ingest:
        ingest.script.extend(Answer(code) for code in refusals)
        done = run_collector(args(ingest.port, tls_dir, tmp_path))
    assert done.returncode == 0, done.stderr
    assert [call.answer.code for call in ingest.calls[:4]] == list(refusals)
    assert len(ingest.calls) == 4 + 4  # each refused try sent again, and only those
    sent: dict[int, set[bytes]] = {}
    for call in ingest.calls:
        sent.setdefault(call.sequence, set()).add(call.payload)
    assert sorted(sent) == [1, 2, 3, 4]
    assert all(len(payloads) == 1 for payloads in sent.values())  # the same batch again
    assert ingest.delivered() == truth
    shown = spool_status(tmp_path / "spool")
    assert (shown["pending"], shown["quarantined"]) == (
        {"batches": 0, "points": 0, "bytes": 0}, [])



def test_answers_ingest_never_gives_a_batch_keep_it_and_send_it_again(
        tmp_path: Path, tls_dir: Path) -> None:
    """Only ingest's INVALID_ARGUMENT (or a rejected outcome) refuses a batch for good. A
    proxy's HTTP 404 reads as UNIMPLEMENTED, and NOT_FOUND or FAILED_PRECONDITION come from
    no ingest either: quarantining the batch for them would keep it from ingest for good
    (and, counted in the spool's cap, pause reading for good)."""
    truth = write_jsonl(tmp_path / "m.jsonl", range(300), ["loss"])  # 3 batches
    answers = (grpc.StatusCode.UNIMPLEMENTED, grpc.StatusCode.NOT_FOUND,
               grpc.StatusCode.FAILED_PRECONDITION)
    with scripted_ingest(tls_dir) as ingest:
        ingest.script.extend(Answer(code) for code in answers)
        done = run_collector(args(ingest.port, tls_dir, tmp_path))
    assert done.returncode == 0, done.stderr
    assert [call.answer.code for call in ingest.calls[:3]] == list(answers)
    assert "not an answer ingest gives a batch" in done.stderr, done.stderr
    assert ingest.delivered() == truth
    shown = spool_status(tmp_path / "spool")
    assert (shown["pending"], shown["quarantined"]) == (
        {"batches": 0, "points": 0, "bytes": 0}, [])

@pytest.mark.parametrize(("answer", "reason"), [
    (Answer(grpc.StatusCode.INVALID_ARGUMENT), "INVALID_ARGUMENT: scripted INVALID_ARGUMENT"),
    (Answer(outcome=pb.PushBatchReply.OUTCOME_REJECTED, reason="over the series bound"),
     "over the series bound"),
], ids=["error", "rejected"])
def test_a_permanent_refusal_is_quarantined_with_its_reason_and_the_rest_delivered(
        tmp_path: Path, tls_dir: Path, answer: Answer, reason: str) -> None:
    truth = write_jsonl(tmp_path / "m.jsonl", range(200), ["loss"])  # 2 batches
    with scripted_ingest(tls_dir) as ingest:
        ingest.script.append(answer)
        done = run_collector(args(ingest.port, tls_dir, tmp_path, "--max-in-flight", "1"))
    assert done.returncode == 3, done.stderr  # not everything was delivered, and it says so
    assert f"batch 1 is quarantined in the spool {tmp_path / 'spool'}: {reason}" in done.stderr
    assert [call.sequence for call in ingest.calls] == [1, 2]  # never sent again
    assert ingest.delivered() == {key: v for key, v in truth.items() if key[1] >= 100}
    shown = spool_status(tmp_path / "spool")
    assert shown["quarantined"] == [{"sequence": 1, "points": 100, "reason": reason}]
    assert shown["pending"] == {"batches": 0, "points": 0, "bytes": 0}


def test_duplicate_safe_is_an_ack(tmp_path: Path, tls_dir: Path) -> None:
    write_jsonl(tmp_path / "m.jsonl", range(50), ["loss"])
    with scripted_ingest(tls_dir) as ingest:
        ingest.script.append(Answer(outcome=pb.PushBatchReply.OUTCOME_DUPLICATE_SAFE))
        done = run_collector(args(ingest.port, tls_dir, tmp_path))
    assert done.returncode == 0, done.stderr
    assert [call.sequence for call in ingest.calls] == [1]
    shown = spool_status(tmp_path / "spool")
    assert (shown["pending"], shown["quarantined"]) == (
        {"batches": 0, "points": 0, "bytes": 0}, [])


def test_the_token_file_is_read_again_for_every_send(tmp_path: Path, tls_dir: Path) -> None:
    write_jsonl(tmp_path / "m.jsonl", range(50), ["loss"])
    with scripted_ingest(tls_dir) as ingest:
        collector = subprocess.Popen(args(ingest.port, tls_dir, tmp_path), stderr=subprocess.PIPE,
                                     text=True, env={**os.environ,
                                                     "TUNEPLANE_TELEMETRY_DRAIN_SECONDS": "5"})
        try:
            ingest.wait_for(lambda calls: len(calls) == 1)
            renewed = tmp_path / "token.new"
            renewed.write_text("token-2\n")
            renewed.rename(tmp_path / "token")  # the platform's atomic rewrite
            write_jsonl(tmp_path / "m.jsonl", range(50, 60), ["loss"], append=True)
            ingest.wait_for(lambda calls: len(calls) == 2)
        finally:
            collector.send_signal(signal.SIGTERM)
            _, stderr = collector.communicate(timeout=60)
    assert collector.returncode == 0, stderr
    assert [(c.sequence, c.token) for c in ingest.calls] == [(1, "Bearer token-1"),
                                                             (2, "Bearer token-2")]


def test_a_spool_left_behind_is_sent_by_the_next_collector_unchanged_and_numbered_on(
        tmp_path: Path, tls_dir: Path) -> None:
    source = tmp_path / "m.jsonl"
    first = write_jsonl(source, range(500), ["loss"])
    left = unreachable_run(HOST_TARGET, tmp_path, tls_dir, {"train": source})
    assert left.returncode == 3, left.stderr
    spool = tmp_path / "spool"
    with contextlib.closing(sqlite3.connect(spool / "spool.sqlite3")) as db:
        spooled = dict(db.execute("SELECT sequence, payload FROM batches"))
    assert sorted(spooled) == [1, 2]  # 250 points a batch
    epoch = spool_status(spool)["epoch"]
    more = write_jsonl(source, range(500, 750), ["loss"], append=True)
    with scripted_ingest(tls_dir) as ingest:
        done = run_collector(collector_args(
            ingest.port, tls_dir, tmp_path / "token", MemberKey("run-1", 2, "rank-0"), spool,
            {"train": source}, "--max-batch-points", "250"))
    assert done.returncode == 0, done.stderr
    sent = {call.sequence: call.payload for call in ingest.calls}
    assert sorted(sent) == [1, 2, 3]
    assert {sequence: sent[sequence] for sequence in spooled} == spooled
    assert {call.batch.identity.spool_epoch for call in ingest.calls} == {epoch}
    assert ingest.delivered() == first | more
    other = unreachable_run(HOST_TARGET, tmp_path / "other", tls_dir, {"train": source})
    assert other.returncode == 3, other.stderr
    assert spool_status(tmp_path / "other" / "spool")["epoch"] != epoch  # a new spool, epoch
