"""Typed identities: a member of a run attempt, a sealed batch of that member, and one
series it wrote."""

from __future__ import annotations

from dataclasses import dataclass

from tuneplane.telemetry.v1 import telemetry_pb2 as pb


@dataclass(frozen=True, slots=True, order=True)
class MemberKey:
    """run/attempt/member: one process identity of one attempt of a run."""

    run_id: str
    attempt: int
    member: str

    def __str__(self) -> str:
        return f"{self.run_id}/{self.attempt}/{self.member}"

    def partition_key(self) -> bytes:
        """Bytes the Kafka partition is chosen from, so a member's batches stay ordered."""
        return str(self).encode()


@dataclass(frozen=True, slots=True, order=True)
class BatchKey:
    """run/attempt/member/batch_id, fixed when the batch was sealed in the spool."""

    member: MemberKey
    spool_epoch: str
    sequence: int

    @property
    def batch_id(self) -> str:
        return f"{self.spool_epoch}-{self.sequence}"

    def __str__(self) -> str:
        return f"{self.member}/{self.batch_id}"

    def kafka_key(self) -> bytes:
        return str(self).encode()

    @classmethod
    def from_proto(cls, identity: pb.BatchIdentity) -> BatchKey:
        return cls(
            MemberKey(identity.run_id, identity.attempt, identity.member),
            identity.spool_epoch,
            identity.sequence,
        )


@dataclass(frozen=True, slots=True, order=True)
class SeriesKey:
    """member/source/run path/tag: one curve as its member's source wrote it (before any
    mapping). ``run_path`` is TensorBoard's run (the event file's directory below the log
    directory), empty for the log directory itself and for other sources."""

    member: MemberKey
    source: str
    run_path: str
    tag: str

    def __str__(self) -> str:
        run = f"{self.run_path}:" if self.run_path else ""
        return f"{self.member}/{self.source}/{run}{self.tag}"
