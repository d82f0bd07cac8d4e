"""The binary's spool, looked at from outside: with ingest unreachable, ``run`` seals every
point into the member's private spool and leaves it there (exit 3, said); ``spool status``
shows it; each sealed batch decodes with the contract's own messages, identity and points
exact. On both targets (aarch64 under qemu)."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import subprocess
from pathlib import Path

import pytest

from tests.support.collector_binary import TARGETS, command, run, unreachable_run
from tests.support.truth import write_jsonl
from tuneplane.telemetry.v1 import telemetry_pb2 as pb


@pytest.mark.parametrize("target", TARGETS)
def test_an_unreachable_ingest_leaves_every_point_sealed_in_the_spool(
        target: str, tmp_path: Path, tls_dir: Path) -> None:
    truth = write_jsonl(tmp_path / "m.jsonl", range(1000), ["loss", "acc"])
    done = unreachable_run(target, tmp_path, tls_dir, {"train": tmp_path / "m.jsonl"})
    assert done.returncode == 3, done.stderr
    assert "drain ended with 8 batches left in the spool" in done.stderr
    assert "2000 points and 0 rich records read, 0 points sent" in done.stderr
    spool = tmp_path / "spool"
    assert stat.S_IMODE(spool.stat().st_mode) == 0o700
    assert stat.S_IMODE((spool / "spool.sqlite3").stat().st_mode) == 0o600
    status = run(target, "spool", "status", str(spool))
    assert status.returncode == 0, status.stderr
    shown = json.loads(status.stdout)
    assert shown["owner"] == "run-1/2/rank-0"
    assert shown["pending"] == {"batches": 8, "points": 2000, "bytes": shown["pending"]["bytes"]}
    assert shown["next_sequence"] == 9
    assert shown["positions"] == [{"source": "train", "file": "", "offset":
                                   (tmp_path / "m.jsonl").stat().st_size, "line": 1001,
                                   "generation": 1}]
    assert shown["source_events"] == []  # nothing truncated, replaced or deleted
    with sqlite3.connect(spool / "spool.sqlite3") as db:
        rows = db.execute("SELECT sequence, payload, points FROM batches ORDER BY sequence")
        got: dict[tuple[str, int], float] = {}
        for sequence, payload, points in rows:
            batch = pb.Batch.FromString(payload)
            assert (batch.identity.run_id, batch.identity.attempt, batch.identity.member,
                    batch.identity.spool_epoch, batch.identity.sequence) == (
                "run-1", 2, "rank-0", shown["epoch"], sequence)
            assert batch.SerializeToString(deterministic=True) == payload  # canonical bytes
            assert sum(len(c.steps) for c in batch.chunks) == points == 250
            for chunk in batch.chunks:
                assert (chunk.source, chunk.run_path) == ("train", "")
                got.update({(chunk.tag, s): v for s, v in zip(chunk.steps, chunk.values,
                                                              strict=True)})
    assert got == truth


def test_a_second_member_cannot_take_over_a_spool(tmp_path: Path, tls_dir: Path) -> None:
    write_jsonl(tmp_path / "m.jsonl", range(10), ["loss"])
    target = "x86_64-unknown-linux-musl"
    first = unreachable_run(target, tmp_path, tls_dir, {"train": tmp_path / "m.jsonl"})
    assert first.returncode == 3, first.stderr
    other = subprocess.run(
        [*command(target), "run", "--run", "run-1", "--attempt", "2", "--member", "rank-1",
         "--spool", str(tmp_path / "spool"), "--target", "localhost:1", "--ca-file",
         str(tls_dir / "ca.pem"), "--token-file", str(tmp_path / "token"), "--source",
         f"train={tmp_path / 'm.jsonl'}"], capture_output=True, text=True, timeout=60,
        check=False)
    assert other.returncode == 2
    assert "belongs to run-1/2/rank-0, not run-1/2/rank-1" in other.stderr


def test_spool_status_of_a_missing_or_unready_spool_is_said(tmp_path: Path) -> None:
    target = "x86_64-unknown-linux-musl"
    missing = run(target, "spool", "status", str(tmp_path))
    assert missing.returncode == 1
    assert f"no spool at {tmp_path} (spool.sqlite3 not found)" in missing.stderr.decode()
    sqlite3.connect(tmp_path / "spool.sqlite3").close()  # created, no tables yet
    unready = run(target, "spool", "status", str(tmp_path))
    assert unready.returncode == 1
    assert b"has no tables yet" in unready.stderr
    assert b"damaged" not in unready.stderr


def test_a_spool_on_a_network_filesystem_is_refused_by_name(tmp_path: Path) -> None:
    table = tmp_path / "mountinfo"
    table.write_text(f"22 1 8:1 / / rw - ext4 /dev/sda1 rw\n"
                     f"30 22 0:40 / {tmp_path} rw - nfs4 server:/export rw\n")
    write_jsonl(tmp_path / "m.jsonl", range(10), ["loss"])
    (tmp_path / "token").write_text("t")
    done = subprocess.run(
        [*command("x86_64-unknown-linux-musl"), "run", "--run", "r", "--attempt", "1",
         "--member", "rank-0", "--spool", str(tmp_path / "spool"), "--target", "localhost:1",
         "--ca-file", str(table), "--token-file", str(tmp_path / "token"), "--source",
         f"train={tmp_path / 'm.jsonl'}"], capture_output=True, text=True, timeout=60,
        check=False, env={**os.environ, "TUNEPLANE_COLLECTOR_MOUNT_TABLE": str(table)})
    assert done.returncode == 2
    assert f"spool directory {tmp_path / 'spool'} is on NFS (nfs4 server:/export at " \
           f"{tmp_path})" in done.stderr
    assert not (tmp_path / "spool").exists()
