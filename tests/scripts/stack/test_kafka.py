"""scripts/stack/kafka.py without starting Kafka: the properties of one node and of three
(one controller quorum, internal topics replicated as the brokers allow), and the layout
scripts/services keeps: status, settings and kill of three brokers, and a switch refused
while the other layout runs."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from scripts.stack.kafka import Node, server_properties
from tests.support.services import services


def properties(node: Node, cluster: list[Node]) -> dict[str, str]:
    return dict(line.split("=", 1) for line in server_properties(node, cluster).splitlines())


def test_one_node_is_broker_and_controller_with_everything_replicated_once() -> None:
    node = Node(1, "kafka", Path("/d/kafka"), 9092, 9093)
    shown = properties(node, [node])
    assert shown["node.id"] == "1"
    assert shown["controller.quorum.voters"] == "1@127.0.0.1:9093"
    assert shown["log.dirs"] == "/d/kafka/logs"
    for name in ("offsets.topic.replication.factor", "transaction.state.log.replication.factor",
                 "default.replication.factor", "min.insync.replicas",
                 "transaction.state.log.min.isr"):
        assert shown[name] == "1", name
    assert shown["unclean.leader.election.enable"] == "false"


def test_three_nodes_form_one_quorum_and_replicate_internal_topics_three_times() -> None:
    cluster = [Node(i, f"kafka-{i}", Path(f"/d/kafka-cluster/broker-{i}"), 9000 + i, 9100 + i)
               for i in (1, 2, 3)]
    shown = properties(cluster[1], cluster)
    assert shown["node.id"] == "2"
    assert shown["process.roles"] == "broker,controller"
    assert shown["listeners"] == "PLAINTEXT://127.0.0.1:9002,CONTROLLER://127.0.0.1:9102"
    assert shown["controller.quorum.voters"] == ("1@127.0.0.1:9101,2@127.0.0.1:9102,"
                                                 "3@127.0.0.1:9103")
    assert shown["log.dirs"] == "/d/kafka-cluster/broker-2/logs"
    assert shown["offsets.topic.replication.factor"] == "3"
    assert shown["default.replication.factor"] == "3"
    assert shown["min.insync.replicas"] == shown["transaction.state.log.min.isr"] == "2"
    assert shown["unclean.leader.election.enable"] == "false"


@pytest.fixture
def three(tmp_path: Path) -> Path:
    """A services folder whose Kafka layout is three brokers (none started)."""
    data = tmp_path / "services"
    data.mkdir()
    (data / "kafka-brokers").write_text("3\n")
    return data


def test_three_brokers_have_a_status_line_each_and_one_bootstrap_list(three: Path) -> None:
    status = services(three, "status", "kafka")
    assert status.returncode == 0, status.stderr
    ports = json.loads((three / "ports.json").read_text())
    assert status.stdout == "".join(f"kafka-{i}\tstopped\t127.0.0.1:{ports[f'kafka_{i}']}\n"
                                    for i in (1, 2, 3))
    env = services(three, "env").stdout.splitlines()
    bootstrap = ",".join(f"127.0.0.1:{ports[f'kafka_{i}']}" for i in (1, 2, 3))
    assert f"export TUNEPLANE_KAFKA_BOOTSTRAP={bootstrap}" in env
    assert "export TUNEPLANE_TOPIC_REPLICATION=3" in env
    assert "kafka" not in ports  # the one-broker layout's ports are never taken


def test_kill_takes_one_broker_of_three_by_id(three: Path) -> None:
    done = services(three, "kill", "kafka", "--broker", "2")
    assert done.returncode == 0, done.stderr
    assert done.stderr == "services: kafka: broker 2 killed\n"
    wrong = services(three, "kill", "kafka", "--broker", "4")
    assert wrong.returncode == 1
    assert "kafka: no broker 4 among 3 (ids 1, 2, 3)" in wrong.stderr


@pytest.fixture
def running_single(tmp_path: Path) -> Iterator[Path]:
    """A services folder whose one broker seems to run (its pid file names a live process)."""
    data = tmp_path / "services"
    data.mkdir()
    stand_in = subprocess.Popen(["sleep", "120"])
    (data / "kafka.pid").write_text(str(stand_in.pid))
    yield data
    stand_in.kill()
    stand_in.wait()


def test_switching_layouts_while_the_other_runs_is_refused(running_single: Path) -> None:
    done = services(running_single, "up", "kafka", "--brokers", "3")
    assert done.returncode == 1
    assert ("kafka: 1 broker(s) run now (kafka); stop them first (scripts/services down "
            "kafka), then up --brokers 3. Each layout keeps its own data "
            f"({running_single / 'kafka'} for one broker, {running_single / 'kafka-cluster'} "
            "for three)") in done.stderr
    assert not (running_single / "kafka-brokers").exists()


def test_brokers_is_kafkas_alone(tmp_path: Path) -> None:
    done = services(tmp_path, "up", "postgres", "--brokers", "3")
    assert done.returncode == 2
    assert "--brokers is Kafka's" in done.stderr
    assert services(tmp_path, "up", "--brokers", "2").returncode == 2  # 1 or 3
