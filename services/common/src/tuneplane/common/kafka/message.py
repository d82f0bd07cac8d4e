"""One record as every consumer step sees it, and the error that marks it poison."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

#: The record header of a batch delivered late (``topics.LATE_HEADER``, here for the steps
#: that see only messages).
LATE_HEADER = "tuneplane-late"


@dataclass(frozen=True, slots=True)
class Message:
    """One record of a topic partition, whichever broker it came from."""

    partition: int
    offset: int
    key: bytes | None
    value: bytes
    timestamp_ms: int = 0
    #: Delivered late: ingest took it under a delivery token (its LATE_HEADER).
    late: bool = False

    def __str__(self) -> str:
        return f"{self.partition}/{self.offset}"


def late_in(headers: Iterable[tuple[str, bytes]] | Mapping[str, bytes] | None) -> bool:
    """Whether a record's headers (pairs, or a mapping as faust may hand them) mark it
    delivered late."""
    pairs = headers.items() if isinstance(headers, Mapping) else headers or ()
    return any(name == LATE_HEADER and value == b"1" for name, value in pairs)


def dead_letter_headers(message: Message, reason: str) -> list[tuple[str, bytes]]:
    """What a record sent to the dead-letter topic carries: its reason and origin, and its
    late mark (a redriven batch is still one delivered late)."""
    headers = [("reason", reason.encode()), ("partition", str(message.partition).encode()),
               ("offset", str(message.offset).encode())]
    return [*headers, (LATE_HEADER, b"1")] if message.late else headers


class InvalidMessage(Exception):
    """This record can never be processed (undecodable or inconsistent).

    Raised by a pure step; the pipeline hands the record to its poison policy with this
    reason and the partition keeps flowing. Never raised for a failure that may pass
    (a database restarting): those are retried, never made poison.
    """
