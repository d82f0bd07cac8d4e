"""What a Kafka cluster says of itself: its brokers, and of each topic asked about its
partitions' replicas and in-sync replicas and the two settings that decide what a lost
broker costs (``min.insync.replicas``, ``unclean.leader.election.enable``), through
aiokafka's admin client (metadata and DescribeConfigs)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from aiokafka.errors import KafkaConnectionError, KafkaError

#: The settings of a topic that decide whether an acknowledged record outlives a broker.
DURABILITY_CONFIGS = ("min.insync.replicas", "unclean.leader.election.enable")
#: Where consumer groups (the projectors, the exporter) keep their committed offsets.
OFFSETS_TOPIC = "__consumer_offsets"
#: Kafka's error code for a topic the cluster does not hold.
UNKNOWN_TOPIC = 3
#: Tries of each request, and the pause between two, when a broker does not answer.
ATTEMPTS, RETRY_SECONDS = 8, 0.25

T = TypeVar("T")


class ClusterUnreachable(RuntimeError):
    """No broker of the bootstrap list answered, or the cluster refused to describe itself;
    the message says which."""


@dataclass(frozen=True, slots=True)
class Broker:
    id: int
    host: str
    port: int
    rack: str | None = None


@dataclass(frozen=True, slots=True)
class Partition:
    id: int
    leader: int  # -1: none now
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class TopicState:
    """A topic as the cluster holds it; ``exists`` False: the cluster has no such topic."""

    name: str
    exists: bool
    partitions: tuple[Partition, ...] = ()
    config: Mapping[str, str] = field(default_factory=dict)

    @property
    def replication(self) -> int:
        """The fewest replicas any partition has (0 without partitions)."""
        return min((len(p.replicas) for p in self.partitions), default=0)


@dataclass(frozen=True, slots=True)
class ClusterState:
    cluster_id: str
    controller: int
    brokers: tuple[Broker, ...]
    topics: tuple[TopicState, ...]


def _topic(found: Mapping[str, Any], config: Mapping[str, str]) -> TopicState:
    if found["error_code"] == UNKNOWN_TOPIC:
        return TopicState(found["topic"], exists=False)
    partitions = tuple(sorted(
        (Partition(p["partition"], p["leader"], tuple(p["replicas"]), tuple(p["isr"]))
         for p in found["partitions"]), key=lambda p: p.id))
    return TopicState(found["topic"], True, partitions, config)


def _configs(responses: Sequence[Any]) -> dict[str, dict[str, str]]:
    """Topic name → the durability settings DescribeConfigs gave for it."""
    out: dict[str, dict[str, str]] = {}
    for response in responses:
        for resource in response.to_object()["resources"]:
            if resource["error_code"] != 0:
                continue  # a topic that does not exist
            out[resource["resource_name"]] = {
                entry["config_names"]: entry["config_value"]
                for entry in resource["config_entries"]
                if entry["config_names"] in DURABILITY_CONFIGS}
    return out


async def _retried(call: Callable[[], Awaitable[T]], attempts: int = ATTEMPTS) -> T:
    """``call`` again while it fails in a way that may pass: the admin client sends each
    request to a broker picked at random, and a broker just lost stays in the metadata for
    its session timeout, so another try goes to another broker."""
    for attempt in range(1, attempts + 1):
        try:
            return await call()
        except KafkaError as exc:
            if not exc.retriable or attempt == attempts:
                raise
            await asyncio.sleep(RETRY_SECONDS)
    raise AssertionError("unreachable")


async def describe(bootstrap: str, topics: Sequence[str],
                   timeout_ms: int = 10_000) -> ClusterState:
    """The cluster's brokers and the state of ``topics`` (each named, held or not)."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=timeout_ms)
    try:
        try:
            await admin.start()
        except KafkaConnectionError as exc:
            raise ClusterUnreachable(f"{bootstrap}: no broker answers") from exc
        cluster = await _retried(admin.describe_cluster)
        found = {t["topic"]: t for t in await _retried(
            lambda: admin.describe_topics(list(topics)))}
        held = [name for name in topics if found[name]["error_code"] != UNKNOWN_TOPIC]
        configs = _configs(await _retried(lambda: admin.describe_configs(
            [ConfigResource(ConfigResourceType.TOPIC, name) for name in held]))) if held else {}
    except KafkaError as exc:
        raise ClusterUnreachable(f"{bootstrap}: {exc}") from exc
    finally:
        await admin.close()
    return ClusterState(
        cluster_id=cluster["cluster_id"], controller=cluster["controller_id"],
        brokers=tuple(sorted((Broker(b["node_id"], b["host"], b["port"], b["rack"])
                              for b in cluster["brokers"]), key=lambda b: b.id)),
        topics=tuple(_topic(found[name], configs.get(name, {})) for name in topics))
