"""The fault suite on three brokers (replication 3, min ISR 2), with broker SIGKILLs among
its faults: one broker at a time, the leader of a member's partition among them, the two
others carrying on; ingest and both projectors on that cluster. Nothing lost, duplicated or
altered (``chaos``).

The full one (1,000,000+ points, three rounds of faults):

    TUNEPLANE_FAULTS_POINTS=1000000 TUNEPLANE_FAULTS_ROUNDS=3 \\
        uv run pytest tests/faults/test_chaos_three_brokers.py -s
"""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

from tests.faults import chaos
from tests.support.environment import Endpoints
from tests.support.processes import start_projector
from tests.support.three_brokers import PARTITIONS, Cluster, leader_of


def broker_faults(brokers: Cluster) -> chaos.Kafka:
    async def inflict(kind: str, rng: random.Random) -> str:
        victim = rng.randint(1, 3)  # broker ids 1, 2, 3
        if kind == "leader":
            leader = await leader_of(brokers, rng.randrange(PARTITIONS))
            victim = leader if leader >= 0 else victim
        brokers.kill(victim)
        down = rng.uniform(3.0, 8.0)
        await asyncio.sleep(down)
        await asyncio.to_thread(brokers.up)
        return f"SIGKILL broker {victim}{' (a leader)' if kind == 'leader' else ''}, " \
               f"back after {down:.1f} s"
    return chaos.Kafka(brokers.bootstrap, ("broker", "leader"), inflict,
                       env={"TUNEPLANE_KAFKA_BOOTSTRAP": brokers.bootstrap})


async def test_nothing_is_lost_duplicated_or_altered_when_brokers_are_killed(
        initialised: Endpoints, three_brokers: Cluster, tls_dir: Path, tmp_path: Path,
        run_id: str) -> None:
    three_brokers.up()
    kafka = broker_faults(three_brokers)
    projectors = [start_projector(initialised, tmp_path / f"projector-{i}.log", env=kafka.env)
                  for i in range(2)]
    try:
        inflicted = await chaos.run(initialised, kafka, projectors, tls_dir, tmp_path, run_id)
        assert sum("SIGKILL broker" in what for what in inflicted) == 2 * chaos.ROUNDS
    finally:
        for process in projectors:
            process.stop()
