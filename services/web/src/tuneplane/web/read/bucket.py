"""The object store bucket rich records are kept in, read without blocking the event loop.

A read fails in one of two ways the answers tell apart: the object is not there
(``ObjectMissing``, a ``NotFound``: 404, or one record named in a page's problems), or the
store did not answer, or answered anything else (``ObjectStoreAway``: 503, logged with what
it answered; the request may pass when retried, or once the operator mends it). The
web's client tries a read at most ``ATTEMPTS`` times and waits ``TIMEOUT`` seconds for a
connection or a read, so a store that is down holds a request for seconds, not the
minutes the projector's patient client would wait.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING

from botocore.exceptions import BotoCoreError, ClientError

from tuneplane.common import objectstore
from tuneplane.controlplane.errors import NotFound

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

ATTEMPTS = 3
TIMEOUT = 10.0
#: The store's own error codes for "no such object" (S3 names it; a HEAD says 404 alone).
MISSING = frozenset({"NoSuchKey", "404", "NotFound"})


class ObjectMissing(NotFound):
    """A rich record's object is not in the bucket (removed outside Tuneplane)."""


class ObjectStoreAway(Exception):
    """The object store did not answer, or answered that it cannot now."""


@dataclass(frozen=True, slots=True)
class Bucket:
    client: S3Client
    name: str

    @classmethod
    def of(cls, endpoint: str, name: str) -> Bucket:
        return cls(objectstore.s3_client(endpoint, attempts=ATTEMPTS, timeout=TIMEOUT), name)

    async def read(self, key: str) -> bytes:
        """The object's bytes (boto3 blocks: it runs in a worker thread)."""
        return await asyncio.to_thread(self._read, key)

    def _read(self, key: str) -> bytes:
        try:
            return self.client.get_object(Bucket=self.name, Key=key)["Body"].read()
        except ClientError as exc:  # (its bucket is the operator's to know, not a viewer's)
            code = str(exc.response.get("Error", {}).get("Code", ""))
            if code in MISSING:
                raise ObjectMissing(f"the object {key!r} is not in the object store") from None
            status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", "")
            raise ObjectStoreAway(  # overloaded, refusing the web's credentials, no bucket
                f"the object store answered {code or status} for {key!r} in bucket "
                f"{self.name!r}") from exc
        except BotoCoreError as exc:  # no connection, a read timed out, a broken answer
            raise ObjectStoreAway(f"the object store did not answer: {exc}") from exc
