"""Archiving a topic to the object store, trimming it below the archive, and reading the
archive back (``docs/design-notes.md``, "a topic that stops growing").

- ``archive``: each partition from the end of what is archived (or its log start) to its
  end offset now, cut into segments of at most ``SEGMENT_RECORDS`` records: each segment's
  object is put first, then recorded in ``topic_archive`` (a segment written again after
  a crash covers offsets already archived: readers drop those).
- ``trim`` (``projector/trim.py``): each partition's log start moved to the archived end.
- ``ArchiveReader``: a consumer of the archived records of each partition over an offset
  range, for replay and rebuild below Kafka's log start.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import asyncpg

from tuneplane.common.kafka.adapter import KafkaRangeConsumer
from tuneplane.common.kafka.message import Message
from tuneplane.projector import archive as segments
from tuneplane.projector import withheld

#: A segment holds at most this many records, or about this many bytes.
SEGMENT_RECORDS = 5000
SEGMENT_BYTES = 256 << 20
#: Held by one archive pass or trim at a time: no two race over a partition's ranges.
ARCHIVE_LOCK = 0x7470_6172_6368  # "tparch"
#: Held shared by every replay and rebuild while it reads, exclusively by a trim: no trim
#: moves a log start under a replay.
TRIM_LOCK = 0x7470_7472_696d  # "tptrim"


class ArchiveBusy(RuntimeError):
    """Another archive pass, trim or replay holds the archive lock."""


class Objects(Protocol):
    def put(self, key: str, data: bytes) -> None: ...

    def get(self, key: str) -> bytes: ...

    def keys(self, prefix: str) -> list[str]: ...


@dataclass
class Archived:
    segments: int = 0
    records: int = 0
    bytes: int = 0
    trimmed: dict[int, int] = field(default_factory=dict)  # partition → new log start


async def archived_ends(conn: asyncpg.Connection, topic: str) -> dict[int, int]:
    """Each partition's next offset to archive: one past the end of its contiguous archived
    prefix (a gap, which no pass leaves but a failure might, ends it)."""
    ends: dict[int, int] = {}
    gapped: set[int] = set()
    for r in await conn.fetch("SELECT partition, first_offset, last_offset FROM "
                              "topic_archive WHERE topic = $1 ORDER BY partition, "
                              "first_offset", topic):
        partition = int(r["partition"])
        end = ends.get(partition, int(r["first_offset"]))
        if partition in gapped or r["first_offset"] > end:
            gapped.add(partition)  # the prefix ends before this segment
            continue
        ends[partition] = max(end, int(r["last_offset"]) + 1)
    return ends


async def exclusive(conn: asyncpg.Connection, lock: int = ARCHIVE_LOCK) -> None:
    """``lock``, exclusively, for the session; ``ArchiveBusy`` when another holds it."""
    if not await conn.fetchval("SELECT pg_try_advisory_lock($1)", lock):
        raise ArchiveBusy("another archive pass or trim, or a replay or rebuild, holds the "
                          "archive's lock; try again when it is done")


async def archive(bootstrap: str, conn: asyncpg.Connection, objects: Objects, *,
                  topic: str) -> Archived:
    """One pass: what each partition holds beyond its archive, up to its end now (under the
    archive lock, exclusively)."""
    done = Archived()
    await exclusive(conn)
    try:
        return await _archive(bootstrap, conn, objects, topic, done)
    finally:
        await conn.execute("SELECT pg_advisory_unlock($1)", ARCHIVE_LOCK)


async def _archive(bootstrap: str, conn: asyncpg.Connection, objects: Objects, topic: str,
                   done: Archived) -> Archived:
    consumer = KafkaRangeConsumer(bootstrap, topic)
    await consumer.start(await archived_ends(conn, topic))
    held: dict[int, list[Message]] = {}
    size: dict[int, int] = {}

    async def sealed(records: list[Message]) -> None:
        first, last, partition = records[0].offset, records[-1].offset, records[0].partition
        records = await unpurged(conn, records)  # the range stays whole: readers skip gaps
        data = segments.encode(records)
        key = segments.segment_key(topic, partition, first, last)
        await asyncio.to_thread(objects.put, key, data)
        stored = await conn.fetchval(
            "INSERT INTO topic_archive (topic, partition, first_offset, last_offset, "
            "object_key, records, bytes, runs) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON "
            "CONFLICT (topic, partition, first_offset) DO UPDATE SET last_offset = "
            "topic_archive.last_offset RETURNING last_offset", topic, partition, first, last,
            key, len(records), len(data), segments.runs_of(records))
        if stored != last:  # written by another pass, over another range: never hidden
            raise ArchiveBusy(f"partition {partition}: a segment from offset {first} is "
                              f"archived to {stored}, this one to {last}")
        done.segments, done.records, done.bytes = (done.segments + 1,
                                                  done.records + len(records),
                                                  done.bytes + len(data))
    try:
        while not consumer.exhausted:
            for message in await consumer.poll(SEGMENT_RECORDS, 1.0):
                records = held.setdefault(message.partition, [])
                records.append(message)
                size[message.partition] = size.get(message.partition, 0) + len(message.value)
                if len(records) >= SEGMENT_RECORDS or size[message.partition] >= SEGMENT_BYTES:
                    await sealed(records)
                    held[message.partition], size[message.partition] = [], 0
        for records in held.values():
            if records:
                await sealed(records)
    finally:
        await consumer.stop()
    return done


async def unpurged(conn: asyncpg.Connection, records: list[Message]) -> list[Message]:
    """``records`` without what a purge removes (``withheld``): the batches of deletions
    being purged, and the rich records of expired runs. The archive never takes them, nor
    takes back what a purge pruned from it."""
    runs = segments.runs_of(records)
    gone, expired = await withheld.purged(conn, runs), await withheld.rich_expired(conn, runs)
    kept = []
    for m in records:
        run, attempt, _, _ = segments.identity(m.key)
        if withheld.of_purged(gone, run, attempt):
            continue
        kept.append(segments.without_rich(m) if withheld.of_expired(expired, run, attempt)
                    else m)
    return kept


class ArchiveReader:
    """The archived records of each partition from ``starts`` up to (not including)
    ``below``, in offset order, as a consumer the projector's pipeline takes."""

    def __init__(self, conn: asyncpg.Connection, objects: Objects, topic: str) -> None:
        self._conn, self._objects, self._topic = conn, objects, topic
        self._records: Iterator[Message] = iter(())
        self.total = 0
        self.exhausted = False

    async def start(self, starts: Mapping[int, int], below: Mapping[int, int],
                    since_ms: int | None = None) -> None:
        archived = await self._conn.fetch(
            "SELECT partition, first_offset, last_offset, object_key, records FROM topic_archive "
            "WHERE topic = $1 ORDER BY partition, first_offset", self._topic)
        wanted = [s for s in archived if s["partition"] in below and s["last_offset"]
                  >= starts.get(s["partition"], 0) and s["first_offset"] < below[s["partition"]]]
        self.total = sum(int(s["records"]) for s in wanted)  # as progress counts: records
        self._records = self._read(wanted, starts, below, since_ms)

    def _read(self, wanted: list[asyncpg.Record], starts: Mapping[int, int],
              below: Mapping[int, int], since_ms: int | None) -> Iterator[Message]:
        after: dict[int, int] = {}  # the last offset given, by partition
        for segment in wanted:
            for m in segments.decode(self._objects.get(segment["object_key"])):
                if m.offset < starts.get(m.partition, 0) or m.offset >= below[m.partition]:
                    continue
                if m.offset <= after.get(m.partition, -1):
                    continue  # a segment written again covers it
                if since_ms is not None and m.timestamp_ms < since_ms:
                    continue
                after[m.partition] = m.offset
                yield m

    async def poll(self, max_records: int, within: float) -> Sequence[Message]:
        taken: list[Message] = []
        for m in self._records:
            taken.append(m)
            if len(taken) >= max_records:
                break
        self.exhausted = not taken
        return taken

    async def commit(self) -> None:
        """Nothing to commit: a replay has no group."""
