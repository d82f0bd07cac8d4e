"""Recently durable batch identities: resends are cheap, reused identities refused."""

from __future__ import annotations

from tuneplane.ingest.recent import RecentBatches, Seen
from tuneplane.ingest.sink import partition_for
from tuneplane.telemetry.v1.identity import BatchKey, MemberKey


def key(sequence: int, member: str = "m") -> BatchKey:
    return BatchKey(MemberKey("r", 1, member), "e", sequence)


def test_same_bytes_are_a_resend_and_other_bytes_a_conflict() -> None:
    recent = RecentBatches()
    digest = RecentBatches.digest(b"payload")
    assert recent.check(key(1), digest) is Seen.NEW
    recent.remember(key(1), digest)
    assert recent.check(key(1), digest) is Seen.SAME
    assert recent.check(key(1), RecentBatches.digest(b"other")) is Seen.CONFLICT


def test_capacity_bounds_memory_oldest_first() -> None:
    recent = RecentBatches(capacity=2)
    for sequence in (1, 2, 3):
        recent.remember(key(sequence), b"d")
    assert recent.check(key(1), b"d") is Seen.NEW
    assert recent.check(key(3), b"d") is Seen.SAME


def test_a_members_batches_share_one_partition_and_members_spread() -> None:
    assert {partition_for(key(s), 12) for s in range(50)} == {partition_for(key(0), 12)}
    spread = {partition_for(key(1, f"rank-{i}"), 12) for i in range(64)}
    assert len(spread) >= 8
