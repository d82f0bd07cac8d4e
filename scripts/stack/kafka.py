"""Kafka in KRaft mode (one node, broker and controller), from its jars on Maven Central
(fetched once into the cache by scripts/kafka/pom.xml), with its log in ``.services/kafka``."""

from __future__ import annotations

import shutil
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


def server_properties(data: Path, port: int, controller: int) -> str:
    return "\n".join([
        "process.roles=broker,controller",
        "node.id=1",
        f"listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller}",
        f"advertised.listeners=PLAINTEXT://127.0.0.1:{port}",
        "controller.listener.names=CONTROLLER",
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        f"controller.quorum.voters=1@127.0.0.1:{controller}",
        f"log.dirs={data / 'logs'}",
        "num.partitions=1",
        "offsets.topic.replication.factor=1",
        "offsets.topic.num.partitions=8",
        "transaction.state.log.replication.factor=1",
        "transaction.state.log.min.isr=1",
        "share.coordinator.state.topic.replication.factor=1",
        "share.coordinator.state.topic.min.isr=1",
        "min.insync.replicas=1",
        "default.replication.factor=1",
        "unclean.leader.election.enable=false",
        "auto.create.topics.enable=false",
        "group.initial.rebalance.delay.ms=0",
        "message.max.bytes=16777216",
        "",
    ])


def start() -> None:
    libs, data = kafka_libs(), DATA / "kafka"
    port, controller = ports()["kafka"], ports()["kafka_controller"]
    data.mkdir(parents=True, exist_ok=True)
    props = data / "server.properties"
    props.write_text(server_properties(data, port, controller))
    java = ["java", "-Xms512m", "-Xmx1g", "-cp", f"{libs}/*"]
    if not (data / "logs" / "meta.properties").exists():
        run("kafka", [*java, "kafka.tools.StorageTool", "format", "-t", "tuneplane-local-cluster1",
                      "-c", str(props)])
    spawn("kafka", [*java, "kafka.Kafka", str(props)])
    log_path = logfile("kafka")

    def started() -> bool:
        return port_open(port) and "Kafka Server started" in log_path.read_text(errors="replace")

    wait_until("kafka", started, seconds=90, log=log_path, process=pidfile("kafka"))


def running() -> bool:
    return pid_of("kafka") is not None and port_open(ports()["kafka"])


def stop() -> None:
    stop_process("kafka")


def kill() -> None:
    kill_process("kafka")
