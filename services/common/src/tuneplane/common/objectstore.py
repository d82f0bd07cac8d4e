"""The S3-compatible object store (boto3): client and bucket set-up."""

from __future__ import annotations

from typing import TYPE_CHECKING

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client


def s3_client(endpoint: str, *, attempts: int = 10, timeout: float = 60.0) -> S3Client:
    """A path-style client of ``endpoint``: each call tried up to ``attempts`` times, each
    connection and read given ``timeout`` seconds (fewer of both for a quick answer)."""
    return boto3.client("s3", endpoint_url=endpoint,
                        config=Config(s3={"addressing_style": "path"},
                                      retries={"total_max_attempts": attempts, "mode": "standard"},
                                      connect_timeout=timeout, read_timeout=timeout))


def ensure_bucket(client: S3Client, bucket: str) -> bool:
    """Create ``bucket`` unless it exists; returns True when it was created."""
    try:
        client.head_bucket(Bucket=bucket)
        return False
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") not in ("404", "NoSuchBucket"):
            raise
    try:
        client.create_bucket(Bucket=bucket)
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") in ("BucketAlreadyOwnedByYou",
                                                         "BucketAlreadyExists"):
            return False
        raise
    return True
