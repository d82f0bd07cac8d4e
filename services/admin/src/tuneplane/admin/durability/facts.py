"""The facts ``tuneplane-admin durability`` reads from the stores a deployment uses: what
Kafka, PostgreSQL and the S3 server say of themselves, or why one could not be read. Plain
values: the claims are a pure function of them (``claims``), the reading is ``read``'s."""

from __future__ import annotations

from dataclasses import dataclass

from tuneplane.common.kafka.cluster import ClusterState

KAFKA, POSTGRESQL, S3 = "kafka", "postgresql", "s3"
#: Every part of a deployment whose loss the command judges, in the order it prints them.
PARTS = (KAFKA, POSTGRESQL, S3)


@dataclass(frozen=True, slots=True)
class Unreachable:
    """A store that could not be read: where it was looked for, and what went wrong."""

    part: str
    where: str
    error: str


@dataclass(frozen=True, slots=True)
class KafkaFacts:
    bootstrap: str
    cluster: ClusterState


@dataclass(frozen=True, slots=True)
class Standby:
    """A row of ``pg_stat_replication``: a standby streaming from the server. Its columns
    past the name are None to a role that may not read them (``pg_read_all_stats``)."""

    name: str
    address: str | None  # None: a local (Unix socket) connection, or not readable
    state: str | None  # streaming, catchup, ...
    sync_state: str | None  # async, potential, sync, quorum


@dataclass(frozen=True, slots=True)
class PostgresFacts:
    where: str  # host:port/database of the URL (no credentials)
    server_address: str | None  # inet_server_addr(): None over a Unix socket
    version: str
    fsync: str
    synchronous_commit: str
    synchronous_standby_names: str
    standbys: tuple[Standby, ...]


@dataclass(frozen=True, slots=True)
class S3Facts:
    endpoint: str
    host: str
    bucket: str
    bucket_exists: bool
    server: str | None  # the Server header of its answer, when it sends one


@dataclass(frozen=True, slots=True)
class Profile:
    """What was read of each part (or why it could not be) and the topics the project
    needs; ``assumed`` names the parts the operator vouches for (``--assume``)."""

    kafka: KafkaFacts | Unreachable
    postgresql: PostgresFacts | Unreachable
    s3: S3Facts | Unreachable
    topics: tuple[str, ...]
    assumed: frozenset[str] = frozenset()

    def unreachable(self) -> list[Unreachable]:
        return [f for f in (self.kafka, self.postgresql, self.s3) if isinstance(f, Unreachable)]
