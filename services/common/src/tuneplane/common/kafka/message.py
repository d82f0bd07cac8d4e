"""One record as every consumer step sees it, and the error that marks it poison."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Message:
    """One record of a topic partition, whichever broker it came from."""

    partition: int
    offset: int
    key: bytes | None
    value: bytes
    timestamp_ms: int = 0

    def __str__(self) -> str:
        return f"{self.partition}/{self.offset}"


class InvalidMessage(Exception):
    """This record can never be processed (undecodable or inconsistent).

    Raised by a pure step; the pipeline hands the record to its poison policy with this
    reason and the partition keeps flowing. Never raised for a failure that may pass
    (a database restarting): those are retried, never made poison.
    """
