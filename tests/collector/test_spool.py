"""The SQLite spool: seal and position in one transaction, identities that never change."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tuneplane.collector.draft import BatchDraft
from tuneplane.collector.spool import SavedPosition, Spool, SpoolError
from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1.identity import MemberKey

OWNER = MemberKey("run-1", 1, "rank-0")


def draft(n: int = 3) -> BatchDraft:
    d = BatchDraft("s")
    for step in range(n):
        d.add(step, 0.0, [("loss", 1.0)])
    return d


def test_sealing_saves_the_batch_and_the_position_together(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "spool", OWNER)
    sequence = spool.seal(draft(), "", SavedPosition("1:2", 100, 4), sealed_at=5.0)
    assert sequence == 1
    assert spool.position("s", "") == SavedPosition("1:2", 100, 4)
    (sealed,) = spool.pending()
    batch = pb.Batch.FromString(sealed.payload)
    assert batch.identity == pb.BatchIdentity(run_id="run-1", attempt=1, member="rank-0",
                                              spool_epoch=spool.epoch, sequence=1)
    assert sealed.points == 3


def test_a_failed_seal_moves_neither_batch_nor_position(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "spool", OWNER)
    spool.seal(draft(), "", SavedPosition("k", 10, 2), sealed_at=0.0)
    with pytest.raises(sqlite3.Error):
        spool.seal(draft(), "", SavedPosition("k", None, 3), sealed_at=0.0)  # type: ignore[arg-type]
    assert spool.position("s", "") == SavedPosition("k", 10, 2)
    assert [b.sequence for b in spool.pending()] == [1]


def test_identity_and_bytes_survive_a_reopen_and_ack_deletes(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "spool", OWNER)
    spool.seal(draft(), "", SavedPosition("k", 10, 2), sealed_at=0.0)
    spool.seal(draft(5), "", SavedPosition("k", 20, 3), sealed_at=0.0)
    before = spool.pending()
    spool.close()
    reopened = Spool(tmp_path / "spool", OWNER)
    assert reopened.pending() == before
    assert reopened.epoch == spool.epoch
    reopened.acknowledge(1)
    assert [b.sequence for b in reopened.pending()] == [2]
    assert reopened.seal(draft(), "", SavedPosition("k", 30, 4), sealed_at=0.0) == 3


def test_a_new_spool_starts_a_new_epoch(tmp_path: Path) -> None:
    assert Spool(tmp_path / "a", OWNER).epoch != Spool(tmp_path / "b", OWNER).epoch


def test_a_spool_of_another_member_is_refused(tmp_path: Path) -> None:
    Spool(tmp_path / "spool", OWNER).close()
    with pytest.raises(SpoolError, match="belongs to run-1/1/rank-0, not run-1/1/rank-1"):
        Spool(tmp_path / "spool", MemberKey("run-1", 1, "rank-1"))


def test_quarantined_batches_are_kept_with_their_reason_but_not_resent(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "spool", OWNER)
    spool.seal(draft(), "", SavedPosition("k", 10, 2), sealed_at=0.0)
    spool.quarantine(1, "INVALID_ARGUMENT: too big")
    assert spool.pending() == []
    assert spool.quarantined() == [(1, "INVALID_ARGUMENT: too big")]
    assert spool.stored_bytes() > 0


def test_spool_directory_and_file_are_private(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "spool", OWNER)
    assert (tmp_path / "spool").stat().st_mode & 0o777 == 0o700
    assert spool.path.stat().st_mode & 0o777 == 0o600
