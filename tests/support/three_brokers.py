"""Three brokers of ``scripts/services up --brokers 3``, started once for the session into a
folder of their own (never the shared ``.services``), the project's topics made on them:
what ``tuneplane-admin durability`` says of them (tests/admin/durability), ingest, the
projector and a collector running on them while brokers are killed, and the fault suite on
them (tests/faults). The fixture ``three_brokers`` is registered in tests/conftest.py."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.environment import BIN, Endpoints
from tests.support.services import services
from tuneplane.common.kafka import cluster, topics

PARTITIONS = 3


@dataclass(frozen=True)
class Cluster:
    data: Path
    env: dict[str, str]  # the settings scripts/services printed for it

    @property
    def bootstrap(self) -> str:
        return self.env["TUNEPLANE_KAFKA_BOOTSTRAP"]

    def kill(self, broker: int) -> None:
        done = services(self.data, "kill", "kafka", "--broker", str(broker))
        assert done.returncode == 0, done.stderr

    def up(self) -> None:
        """Start the brokers that do not run."""
        done = services(self.data, "up", "kafka", timeout=420)
        assert done.returncode == 0, done.stderr


def exported(lines: str) -> dict[str, str]:
    return dict(line.removeprefix("export ").split("=", 1) for line in lines.splitlines())


@pytest.fixture(scope="session")
def three_brokers(endpoints: Endpoints, tmp_path_factory: pytest.TempPathFactory,
                  ) -> Iterator[Cluster]:
    data = tmp_path_factory.mktemp("kafka3") / "services"
    started = services(data, "up", "kafka", "--brokers", "3", timeout=420)
    assert started.returncode == 0, started.stderr
    found = Cluster(data, exported(started.stdout))
    try:
        assert found.env["TUNEPLANE_TOPIC_REPLICATION"] == "3"
        assert len(found.bootstrap.split(",")) == 3
        made = subprocess.run(
            [str(BIN / "tuneplane-admin"), "topics"], capture_output=True, text=True,
            check=False, timeout=120,
            env={**os.environ, "TUNEPLANE_KAFKA_BOOTSTRAP": found.bootstrap,
                 "TUNEPLANE_TOPIC_REPLICATION": found.env["TUNEPLANE_TOPIC_REPLICATION"],
                 "TUNEPLANE_TOPIC_PARTITIONS": str(PARTITIONS)})
        assert made.returncode == 0, made.stderr
        yield found
    finally:
        services(data, "kill", "kafka")  # its data is the session's: no clean stop needed


async def leader_of(found: Cluster, partition: int) -> int:
    state = await cluster.describe(found.bootstrap, [topics.BATCHES])
    return state.topics[0].partitions[partition].leader


