"""The object store bucket rich records are kept in, read without blocking the event loop."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client


@dataclass(frozen=True, slots=True)
class Bucket:
    client: S3Client
    name: str

    async def read(self, key: str) -> bytes:
        """The object's bytes (boto3 blocks: it runs in a worker thread)."""
        return await asyncio.to_thread(self._read, key)

    def _read(self, key: str) -> bytes:
        return self.client.get_object(Bucket=self.name, Key=key)["Body"].read()
