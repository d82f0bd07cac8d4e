"""The S3-compatible store started by scripts/services: bucket set-up and a round trip."""

from __future__ import annotations

import uuid

from tests.support.environment import Endpoints
from tuneplane.common.objectstore import ensure_bucket, s3_client


def test_bucket_is_created_once_and_objects_round_trip(endpoints: Endpoints) -> None:
    client = s3_client(endpoints.s3_endpoint)
    bucket = f"test-{uuid.uuid4().hex[:10]}"
    assert ensure_bucket(client, bucket) is True
    assert ensure_bucket(client, bucket) is False
    client.put_object(Bucket=bucket, Key="a/b", Body=b"\x00rich bytes")
    assert client.get_object(Bucket=bucket, Key="a/b")["Body"].read() == b"\x00rich bytes"
