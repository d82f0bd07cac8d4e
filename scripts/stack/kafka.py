"""Kafka in KRaft mode from its jars on Maven Central (fetched once into the cache by
scripts/kafka/pom.xml): one node (broker and controller, the default), or three such nodes
on loopback, one controller quorum of three (``up --brokers 3``).

Each layout keeps its own data, ports and processes, so switching never mixes them: one
broker is ``kafka`` (data in ``.services/kafka``, ports ``kafka`` and ``kafka_controller``),
three are ``kafka-1`` to ``kafka-3`` (data in ``.services/kafka-cluster/broker-N``, ports
``kafka_N`` and ``kafka_controller_N``). The layout last chosen is kept in
``.services/kafka-brokers``; a switch while the other layout runs is refused. Internal
topics get replication ``min(3, brokers)`` and min ISR ``min(2, brokers)``, as
``TUNEPLANE_TOPIC_REPLICATION`` (printed with the settings) gives the project's topics.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from scripts.lib.ports import port_open
from scripts.lib.processes import run, wait_until
from scripts.stack.common import (
    CACHE,
    DATA,
    ROOT,
    ServiceError,
    kill_process,
    log,
    logfile,
    pid_of,
    pidfile,
    ports,
    spawn,
    stop_process,
)

KAFKA_VERSION = "4.1.1"
#: The layouts ``up --brokers`` takes.
LAYOUTS = (1, 3)
LAYOUT_FILE = "kafka-brokers"
SINGLE_DIR, CLUSTER_DIR = "kafka", "kafka-cluster"
CLUSTER_IDS = {1: "tuneplane-local-cluster1", 3: "tuneplane-local-cluster3"}
HEAP = {1: ["-Xms512m", "-Xmx1g"], 3: ["-Xms256m", "-Xmx768m"]}


@dataclass(frozen=True, slots=True)
class Node:
    """One Kafka process: broker and controller."""

    id: int
    name: str  # its pid and log file under .services/, and its line in status
    data: Path
    port: int
    controller_port: int

    def running(self) -> bool:
        return pid_of(self.name) is not None and port_open(self.port)


def nodes(brokers: int) -> list[Node]:
    """The nodes of a layout, on their kept ports."""
    if brokers == 1:
        p = ports(["kafka", "kafka_controller"])
        return [Node(1, "kafka", DATA / SINGLE_DIR, p["kafka"], p["kafka_controller"])]
    ids = range(1, brokers + 1)
    p = ports([name for i in ids for name in (f"kafka_{i}", f"kafka_controller_{i}")])
    return [Node(i, f"kafka-{i}", DATA / CLUSTER_DIR / f"broker-{i}", p[f"kafka_{i}"],
                 p[f"kafka_controller_{i}"]) for i in ids]


def layout() -> int:
    """How many brokers the layout last chosen has (1 until ``up --brokers 3``)."""
    path = DATA / LAYOUT_FILE
    return int(path.read_text()) if path.exists() else 1


def choose(brokers: int | None) -> int:
    """Take ``brokers`` (None: the layout last chosen) as the layout; refused while the
    other layout runs."""
    current = layout()
    wanted = current if brokers is None else brokers
    if wanted not in LAYOUTS:
        raise ServiceError(f"kafka: --brokers is one of {', '.join(map(str, LAYOUTS))}")
    if wanted != current:
        still = [n.name for n in nodes(current) if pid_of(n.name) is not None]
        if still:
            raise ServiceError(
                f"kafka: {current} broker(s) run now ({', '.join(still)}); stop them first "
                f"(scripts/services down kafka), then up --brokers {wanted}. Each layout keeps "
                f"its own data ({DATA / SINGLE_DIR} for one broker, {DATA / CLUSTER_DIR} for "
                f"three)")
        log(f"kafka: {wanted} broker(s) from now on; the data of {current} is kept apart")
        DATA.mkdir(parents=True, exist_ok=True)
        (DATA / LAYOUT_FILE).write_text(f"{wanted}\n")
    return wanted


def replication(brokers: int) -> int:
    return min(3, brokers)


def min_insync(brokers: int) -> int:
    return min(2, brokers)


def kafka_libs() -> Path:
    libs = CACHE / f"kafka-{KAFKA_VERSION}" / "libs"
    if libs.exists() and any(libs.glob("kafka_2.13-*.jar")):
        return libs
    if shutil.which("mvn") is None:
        raise ServiceError("kafka: Maven (mvn) is needed to fetch the broker's jars")
    log(f"kafka: fetching Kafka {KAFKA_VERSION} jars from Maven Central into {libs}")
    tmp = libs.with_name("libs.partial")
    shutil.rmtree(tmp, ignore_errors=True)
    run("kafka", ["mvn", "-B", "-q", "-f", str(ROOT / "scripts" / "kafka" / "pom.xml"),
                  "org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies",
                  "-DincludeScope=runtime", f"-DoutputDirectory={tmp}"])
    tmp.rename(libs)
    return libs


def server_properties(node: Node, cluster: Sequence[Node]) -> str:
    copies, in_sync = replication(len(cluster)), min_insync(len(cluster))
    voters = ",".join(f"{n.id}@127.0.0.1:{n.controller_port}" for n in cluster)
    return "\n".join([
        "process.roles=broker,controller",
        f"node.id={node.id}",
        f"listeners=PLAINTEXT://127.0.0.1:{node.port},CONTROLLER://127.0.0.1:"
        f"{node.controller_port}",
        f"advertised.listeners=PLAINTEXT://127.0.0.1:{node.port}",
        "controller.listener.names=CONTROLLER",
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        f"controller.quorum.voters={voters}",
        f"log.dirs={node.data / 'logs'}",
        "num.partitions=1",
        f"offsets.topic.replication.factor={copies}",
        "offsets.topic.num.partitions=8",
        f"transaction.state.log.replication.factor={copies}",
        f"transaction.state.log.min.isr={in_sync}",
        f"share.coordinator.state.topic.replication.factor={copies}",
        f"share.coordinator.state.topic.min.isr={in_sync}",
        f"min.insync.replicas={in_sync}",
        f"default.replication.factor={copies}",
        "unclean.leader.election.enable=false",
        "auto.create.topics.enable=false",
        "group.initial.rebalance.delay.ms=0",
        "message.max.bytes=16777216",
        # Segments below a trimmed log start go within seconds (Kafka's defaults: a check
        # every 5 minutes, files deleted 1 minute later).
        "log.retention.check.interval.ms=5000",
        "log.segment.delete.delay.ms=1000",
        "",
    ])


def _spawn(node: Node, cluster: Sequence[Node], libs: Path) -> None:
    node.data.mkdir(parents=True, exist_ok=True)
    props = node.data / "server.properties"
    props.write_text(server_properties(node, cluster))
    java = ["java", *HEAP[len(cluster)], "-cp", f"{libs}/*"]
    if not (node.data / "logs" / "meta.properties").exists():
        run(node.name, [*java, "kafka.tools.StorageTool", "format", "-t",
                        CLUSTER_IDS[len(cluster)], "-c", str(props)])
    spawn(node.name, [*java, "kafka.Kafka", str(props)])


def _wait(node: Node, seconds: float) -> None:
    log_path = logfile(node.name)

    def started() -> bool:
        return port_open(node.port) and "Kafka Server started" in log_path.read_text(
            errors="replace")

    wait_until(node.name, started, seconds=seconds, log=log_path, process=pidfile(node.name))


def start() -> None:
    """Start every node of the layout that does not run (all at once: a node of three waits
    for a quorum), and wait until each is serving."""
    cluster = nodes(layout())
    stopped = [n for n in cluster if not n.running()]
    libs = kafka_libs()
    for node in stopped:
        _spawn(node, cluster, libs)
    for node in stopped:
        _wait(node, seconds=90 if len(cluster) == 1 else 240)


def running() -> bool:
    return all(n.running() for n in nodes(layout()))


def bootstrap() -> str:
    return ",".join(f"127.0.0.1:{n.port}" for n in nodes(layout()))


def status() -> list[tuple[str, bool, str]]:
    return [(n.name, n.running(), f"127.0.0.1:{n.port}") for n in nodes(layout())]


def stop() -> None:
    """SIGTERM every node at once: stopped one after another, the last would wait for a
    controller quorum already gone until its SIGKILL."""
    names = [n.name for n in nodes(layout())]
    with ThreadPoolExecutor(len(names)) as pool:
        list(pool.map(stop_process, names))


def kill(broker: int | None = None) -> None:
    """SIGKILL every node, or only broker ``broker`` of the layout."""
    cluster = nodes(layout())
    if broker is not None and broker not in [n.id for n in cluster]:
        raise ServiceError(f"kafka: no broker {broker} among {len(cluster)} "
                           f"(ids {', '.join(str(n.id) for n in cluster)})")
    for node in cluster:
        if broker is None or node.id == broker:
            kill_process(node.name)
