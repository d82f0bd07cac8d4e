"""Compares what PostgreSQL and S3 hold for a run with the truth: lost, duplicated and
altered points and rich records."""

from __future__ import annotations

import collections
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import asyncpg

from tests.faults.workload import Workload
from tests.support.readmodels import curve_points
from tuneplane.common import objectstore
from tuneplane.tensorboard.v1 import event_pb2


@dataclass(frozen=True, slots=True)
class Count:
    expected: int
    stored: int
    lost: int
    duplicated: int
    altered: int
    unexpected: int

    def clean(self) -> bool:
        return not (self.lost or self.duplicated or self.altered or self.unexpected)

    def line(self, what: str) -> str:
        return (f"{what:<13} expected {self.expected:>9,}  stored {self.stored:>9,}  "
                f"lost {self.lost}  duplicated {self.duplicated}  altered {self.altered}  "
                f"unexpected {self.unexpected}")


def compare(stored: Sequence[tuple[Hashable, object]], truth: Mapping[Any, object]) -> Count:
    seen = collections.Counter(key for key, _ in stored)
    return Count(
        expected=len(truth), stored=len(stored),
        lost=sum(1 for key in truth if key not in seen),
        duplicated=sum(n - 1 for n in seen.values() if n > 1),
        altered=sum(1 for key, value in stored if key in truth and truth[key] != value),
        unexpected=sum(1 for key in seen if key not in truth))


async def points(db: asyncpg.Connection, workload: Workload, run_id: str) -> Count:
    rows = await curve_points(db, run_id)
    return compare([((m, s, t, st), v) for m, s, t, st, v in rows], workload.truth())


async def rich_records(db: asyncpg.Connection, workload: Workload, run_id: str,
                       endpoint: str, bucket: str) -> Count:
    """Every image's metadata row in PostgreSQL, its bytes read back from S3."""
    rows = await db.fetch("SELECT member, step, object_key FROM rich_records "
                          "WHERE run_id = $1 AND tag = 'samples'", run_id)
    client = objectstore.s3_client(endpoint)
    stored: list[tuple[Hashable, object]] = []
    for row in rows:
        body = client.get_object(Bucket=bucket, Key=row["object_key"])["Body"].read()
        value = event_pb2.Summary.Value.FromString(body)
        stored.append(((row["member"], row["step"]), value.image.encoded_image_string))
    return compare(stored, workload.images())
