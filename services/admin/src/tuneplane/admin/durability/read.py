"""The adapters of ``tuneplane-admin durability``: each reads what one store says of itself
(Kafka through the project's admin adapter, PostgreSQL with asyncpg, S3 with boto3), or
says why it could not, within a few seconds and without raising."""

from __future__ import annotations

import asyncio
import logging
from urllib.parse import urlsplit

import asyncpg
from botocore.exceptions import BotoCoreError, ClientError

from tuneplane.admin.durability.facts import (
    KAFKA,
    POSTGRESQL,
    S3,
    KafkaFacts,
    PostgresFacts,
    Profile,
    S3Facts,
    Standby,
    Unreachable,
)
from tuneplane.common import objectstore
from tuneplane.common.kafka import cluster, topics

#: The topics whose replicas decide what a lost broker costs: the system of record, its
#: dead letters, and where the projectors keep their committed offsets.
TOPICS = (topics.BATCHES, topics.BATCHES_DLQ, cluster.OFFSETS_TOPIC)
#: Seconds each store is given to answer.
TIMEOUT = 15.0

SETTINGS_SQL = """
SELECT current_setting('server_version') AS version, current_setting('fsync') AS fsync,
       current_setting('synchronous_commit') AS synchronous_commit,
       current_setting('synchronous_standby_names') AS synchronous_standby_names,
       host(inet_server_addr()) AS server_address
"""
STANDBYS_SQL = """
SELECT application_name, host(client_addr) AS address, state, sync_state
FROM pg_stat_replication ORDER BY application_name
"""


async def read_kafka(bootstrap: str) -> KafkaFacts | Unreachable:
    # The failure is reported once, here; the client's own log lines would only repeat it.
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)
    try:
        state = await asyncio.wait_for(
            cluster.describe(bootstrap, TOPICS, timeout_ms=int(TIMEOUT * 1000)), TIMEOUT * 2)
    except cluster.ClusterUnreachable as exc:
        return Unreachable(KAFKA, bootstrap, str(exc))
    except TimeoutError:
        return Unreachable(KAFKA, bootstrap, f"{bootstrap}: no answer in {TIMEOUT * 2:.0f} s")
    return KafkaFacts(bootstrap, state)


def where_of(database_url: str) -> str:
    """host:port/database of a PostgreSQL URL, without its credentials."""
    url = urlsplit(database_url)
    return f"{url.hostname or 'localhost'}:{url.port or 5432}{url.path}"


async def read_postgresql(database_url: str) -> PostgresFacts | Unreachable:
    where = where_of(database_url)
    try:
        conn = await asyncpg.connect(database_url, timeout=TIMEOUT)
    except (OSError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
        return Unreachable(POSTGRESQL, where, f"{where}: {exc or type(exc).__name__}")
    try:
        found = await conn.fetchrow(SETTINGS_SQL, timeout=TIMEOUT)
        standbys = await conn.fetch(STANDBYS_SQL, timeout=TIMEOUT)
    except (OSError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
        return Unreachable(POSTGRESQL, where, f"{where}: {exc or type(exc).__name__}")
    finally:
        await conn.close()
    assert found is not None
    return PostgresFacts(
        where=where, server_address=found["server_address"], version=found["version"],
        fsync=found["fsync"], synchronous_commit=found["synchronous_commit"],
        synchronous_standby_names=found["synchronous_standby_names"],
        standbys=tuple(Standby(s["application_name"], s["address"], s["state"],
                               s["sync_state"]) for s in standbys))


def read_s3(endpoint: str, bucket: str) -> S3Facts | Unreachable:
    host = urlsplit(endpoint).hostname or ""
    client = objectstore.s3_client(endpoint, attempts=2, timeout=TIMEOUT / 3)
    try:
        answer = client.head_bucket(Bucket=bucket)
        headers = answer["ResponseMetadata"].get("HTTPHeaders", {})
        exists = True
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code")
        if code not in ("404", "NoSuchBucket"):
            return Unreachable(S3, endpoint, f"{endpoint}: bucket {bucket}: {exc}")
        headers = exc.response.get("ResponseMetadata", {}).get("HTTPHeaders", {})
        exists = False
    except BotoCoreError as exc:
        return Unreachable(S3, endpoint, f"{endpoint}: {exc}")
    return S3Facts(endpoint, host, bucket, exists, headers.get("server"))


async def read_profile(kafka_bootstrap: str, database_url: str, s3_endpoint: str,
                       s3_bucket: str, assumed: frozenset[str] = frozenset()) -> Profile:
    """Every part read at once."""
    kafka, pg, s3 = await asyncio.gather(read_kafka(kafka_bootstrap),
                                         read_postgresql(database_url),
                                         asyncio.to_thread(read_s3, s3_endpoint, s3_bucket))
    return Profile(kafka, pg, s3, TOPICS, assumed)
