"""Recent series answers kept by a web replica, each with the version of the series it was
read at, and given again only while that version stands.

A team watching one run asks the same questions again and again (every viewer's chart,
every refresh); reading a 1M-point series' summaries costs PostgreSQL a few milliseconds
and the replica as much again to reduce them. A question answered before costs one small
statement instead: the series' version, read with the same lookup as the read itself.

The version is the series' id, its ``series_stats`` row version (``xmin``) and whether a
purge marker may apply. Every write of a chunk upserts the series' stats row in the same
transaction (the projector's writer), and a purge deletes both: so a version that stands
means the same chunks. A purge marker appearing changes it too. An answer that depended on
purge markers (TensorBoard's purge, with one applying) is never kept: its cuts depend on
the member's other batches as well.

Answers are kept by their size (their arrays' bytes ``WITH_BODY`` times, for the JSON the
scalars route keeps with one, and ``ENTRY_BYTES`` for the rest),
least recently used first out, up to ``TUNEPLANE_WEB_ANSWER_CACHE_BYTES``; 0 keeps none.
An answer with no point in its range is not kept: reading it costs next to nothing.
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from typing import Generic, NamedTuple, TypeVar

import numpy as np

from tuneplane.common.db import Connection
from tuneplane.telemetry.v1.identity import SeriesKey
from tuneplane.web.read import series_read
from tuneplane.web.read.series_chunks import READ_MARKED, READ_SERIES, STATS, Version
from tuneplane.web.read.series_read import SeriesRead

T = TypeVar("T")
VERSION = f"""{READ_SERIES}
SELECT s.series_id, {STATS.format("s")}, {READ_MARKED} FROM s
"""


async def version_of(conn: Connection, key: SeriesKey) -> Version | None:
    """The series' version now (None: not stored, or it has no stats row)."""
    m = key.member
    row = await conn.fetchrow(VERSION, m.run_id, m.attempt, m.member, key.source,
                              key.run_path, key.tag)
    if row is None or row["stats"] is None:
        return None
    return Version(row["series_id"], row["stats"], row["marked"])


#: What a kept answer costs beside its arrays' bytes: its entry, its question's strings and
#: its objects (a numpy array's header, its dataclasses), counted high.
ENTRY_BYTES = 2048
#: A kept answer's arrays are counted this many times: once for themselves, and for the JSON
#: body the scalars route keeps with it (2,000 buckets' JSON: 1.7 times their arrays).
WITH_BODY = 3


class Question(NamedTuple):
    key: SeriesKey
    lo: int | None
    hi: int | None
    max_points: int
    unpack_budget: int
    purge: bool


def frozen(answer: T) -> tuple[T, int]:
    """``answer`` with every numpy array in it read-only, and their bytes."""
    size = 0

    def freeze(value: object) -> None:
        nonlocal size
        if isinstance(value, np.ndarray):
            value.flags.writeable = False
            size += value.nbytes
        elif dataclasses.is_dataclass(value) and not isinstance(value, type):
            for f in dataclasses.fields(value):
                freeze(getattr(value, f.name))
    freeze(answer)
    return answer, size


class Answers(Generic[T]):
    """Answers by question, each with the version it was read at; least recently used out
    past ``max_bytes``."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._kept: OrderedDict[Question, tuple[Version, T, int]] = OrderedDict()
        self._bytes = 0

    def __contains__(self, question: Question) -> bool:
        return question in self._kept

    def get(self, question: Question, version: Version | None) -> T | None:
        """The answer kept for ``question`` if it was read at ``version`` (else None, and
        an answer of another version is dropped)."""
        found = self._kept.get(question)
        if found is None:
            return None
        if found[0] != version:
            self._drop(question)
            return None
        self._kept.move_to_end(question)
        return found[1]

    def put(self, question: Question, version: Version, answer: T) -> None:
        if question in self._kept:
            self._drop(question)
        answer, size = frozen(answer)
        key = question.key
        size = size * WITH_BODY + ENTRY_BYTES + sum(len(part) for part in (
            key.member.run_id, key.member.member, key.source, key.run_path, key.tag))
        if size > self.max_bytes:
            return
        self._kept[question] = (version, answer, size)
        self._bytes += size
        while self._bytes > self.max_bytes:
            self._drop(next(iter(self._kept)))

    def _drop(self, question: Question) -> None:
        self._bytes -= self._kept.pop(question)[2]

    @property
    def size(self) -> tuple[int, int]:
        """The answers kept and their bytes."""
        return len(self._kept), self._bytes


async def read(conn: Connection, answers: Answers[SeriesRead], key: SeriesKey, lo: int | None,
               hi: int | None, max_points: int, unpack_budget: int, *,
               purge: bool) -> SeriesRead | None:
    """``series_read.read``, given from ``answers`` while the series' version stands, kept
    there when it did not depend on purge markers."""
    question = Question(key, lo, hi, max_points, unpack_budget, purge)
    if question in answers:
        kept = answers.get(question, await version_of(conn, key))
        if kept is not None:
            return kept
    found = await series_read.read(conn, key, lo, hi, max_points, unpack_budget, purge=purge)
    if answers.max_bytes and found is not None and found.version is not None and not (
            purge and found.version.marked) and found.answer.points_in_range:
        answers.put(question, found.version, found)  # (nothing in range: read at no cost)
    return found
