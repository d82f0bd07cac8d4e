"""Local real services for development and tests: PostgreSQL, Kafka (KRaft) and an S3 server.

Standard library only, so it runs before the project's environment exists.
Data lives under ``.services/`` in the checkout (ignored by git); downloads are
cached under ``~/.cache/tuneplane`` (``TUNEPLANE_CACHE_DIR``) so reruns are quick.
Ports are picked free at the first ``up`` and kept in ``.services/ports.json``; the
settings are printed and written to ``.services/env``, so two checkouts on one machine
run side by side. Each component is a module of ``scripts/stack``.

    scripts/services up       start what is not running, health-check, print settings
    scripts/services up --brokers 3
                              Kafka as three brokers (KRaft, one quorum of three, on
                              loopback); --brokers 1 goes back to one. Each layout keeps its
                              own data; without the flag, the layout last chosen (1 at first)
    scripts/services down     stop everything (data is kept; ``down --wipe`` deletes it)
    scripts/services status   one line per component
    scripts/services env      print the settings as ``export`` lines
    scripts/services restart COMPONENT   stop and start one of postgres, kafka, s3
    scripts/services kill COMPONENT      SIGKILL it, no clean shutdown (fault tests); ``up``
                                         starts it again and it recovers from its files
    scripts/services kill kafka --broker N   SIGKILL only broker N of three
"""

from __future__ import annotations

import argparse
import secrets
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

from scripts.lib.exports import publish
from scripts.lib.processes import ProcessError, status_line
from scripts.stack import kafka, postgres, s3
from scripts.stack.common import DATA, log, ports

#: The versions it runs (tests/compose checks that compose's images are the same).
KAFKA_VERSION = kafka.KAFKA_VERSION
SEAWEEDFS_VERSION = s3.SEAWEEDFS_VERSION


@dataclass(frozen=True, slots=True)
class Component:
    name: str
    start: Callable[[], None]
    stop: Callable[[], None]
    kill: Callable[[], None]
    running: Callable[[], bool]
    #: Where it serves (Kafka: its bootstrap list), and its status lines (Kafka: a broker each).
    address: Callable[[], str]
    status: Callable[[], list[tuple[str, bool, str]]]


def on_port(name: str, running: Callable[[], bool], **parts: Callable[..., None]) -> Component:
    def address() -> str:
        return f"127.0.0.1:{ports()[name]}"
    return Component(name, running=running, address=address,
                     status=lambda: [(name, running(), address())], **parts)


COMPONENTS = {
    c.name: c for c in (
        on_port("postgres", postgres.running, start=postgres.start, stop=postgres.stop,
                kill=postgres.kill),
        Component("kafka", kafka.start, kafka.stop, kafka.kill, kafka.running, kafka.bootstrap,
                  kafka.status),
        on_port("s3", s3.running, start=s3.start, stop=s3.stop, kill=s3.kill),
    )
}


def settings() -> dict[str, str]:
    secret_file = DATA / "secrets.env"
    if not secret_file.exists():
        DATA.mkdir(parents=True, exist_ok=True)
        secret_file.write_text(f"TUNEPLANE_WEB_JWT_SECRET={secrets.token_urlsafe(32)}\n"
                               f"TUNEPLANE_SECRET_ENC_KEY={secrets.token_urlsafe(32)}\n")
        secret_file.chmod(0o600)
    values = dict(line.split("=", 1) for line in secret_file.read_text().split())
    p = ports()
    return {
        "TUNEPLANE_DATABASE_URL": f"postgresql://postgres@127.0.0.1:{p['postgres']}/tuneplane",
        "TUNEPLANE_KAFKA_BOOTSTRAP": kafka.bootstrap(),
        # The project's topics as the brokers allow: 3 (min ISR 2) on three, 1 on one.
        "TUNEPLANE_TOPIC_REPLICATION": str(kafka.replication(kafka.layout())),
        "TUNEPLANE_S3_ENDPOINT": f"http://127.0.0.1:{p['s3']}",
        "TUNEPLANE_S3_BUCKET": "tuneplane",
        "AWS_ACCESS_KEY_ID": s3.DEV_ACCESS_KEY,
        "AWS_SECRET_ACCESS_KEY": s3.DEV_SECRET_KEY,
        "AWS_DEFAULT_REGION": "us-east-1",
        "TUNEPLANE_GATEWAY_HOSTNAME": "localhost",
        "TUNEPLANE_TELEMETRY_TARGET": "localhost:8444",
        **values,
    }


def print_env() -> None:
    """The settings as ``export`` lines, on stdout and in ``.services/env`` (to source)."""
    publish(settings(), DATA / "env")


def kill(names: list[str], broker: int | None = None) -> None:
    for name in names:
        if name == "kafka" and broker is not None:
            kafka.kill(broker)
            log(f"kafka: broker {broker} killed")
            continue
        COMPONENTS[name].kill()
        log(f"{name}: killed")


def up(names: list[str], brokers: int | None = None) -> None:
    DATA.mkdir(parents=True, exist_ok=True)
    if "kafka" in names:
        kafka.choose(brokers)
    for name in names:
        component = COMPONENTS[name]
        if component.running():
            log(f"{name}: already running on {component.address()}")
            continue
        started = time.monotonic()
        component.start()
        log(f"{name}: healthy on {component.address()} ({time.monotonic() - started:.1f}s)")
    print_env()


def down(names: list[str], wipe: bool) -> None:
    for name in reversed(names):
        COMPONENTS[name].stop()
        log(f"{name}: stopped")
    if wipe:
        pg = DATA / "pg"
        if pg.is_symlink():
            shutil.rmtree(pg.resolve(), ignore_errors=True)
        shutil.rmtree(DATA, ignore_errors=True)
        log(f"removed {DATA}")


def status(names: list[str]) -> None:
    for name in names:
        for line, running, address in COMPONENTS[name].status():
            print(status_line(line, running, address))


def main() -> int:
    parser = argparse.ArgumentParser(prog="scripts/services", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    for command in ("up", "down", "status", "restart", "kill"):
        p = sub.add_parser(command)
        p.add_argument("components", nargs="*", metavar="COMPONENT",
                       help=f"one or more of {', '.join(COMPONENTS)} (default: all)")
        if command == "down":
            p.add_argument("--wipe", action="store_true", help="also delete the data folder")
        if command == "up":
            p.add_argument("--brokers", type=int, choices=kafka.LAYOUTS,
                           help="Kafka's brokers: 3 on loopback (replication 3, min ISR 2), "
                                "or 1; each keeps its own data (default: as last chosen, "
                                "1 at first)")
        if command == "kill":
            p.add_argument("--broker", type=int, metavar="ID",
                           help="with kafka: only this broker (1 to 3 of three)")
    sub.add_parser("env", help="print the settings as export lines")
    sub.add_parser("weed", help="print the path of the SeaweedFS binary (fetched into the "
                                "cache when absent)")
    args = parser.parse_args()
    wanted = getattr(args, "components", None) or list(COMPONENTS)
    unknown = sorted(set(wanted) - set(COMPONENTS))
    if unknown:
        parser.error(f"unknown component {', '.join(unknown)}; choose from {', '.join(COMPONENTS)}")
    names = [n for n in COMPONENTS if n in wanted]
    if getattr(args, "brokers", None) is not None and "kafka" not in names:
        parser.error("--brokers is Kafka's: name kafka among the components (or none)")
    if getattr(args, "broker", None) is not None and names != ["kafka"]:
        parser.error("--broker kills one Kafka broker: name kafka alone")
    try:
        if args.command == "up":
            up(names, args.brokers)
        elif args.command == "down":
            down(names, args.wipe)
        elif args.command == "kill":
            kill(names, args.broker)
        elif args.command == "restart":
            down(names, wipe=False)
            up(names)
        elif args.command == "status":
            status(names)
        elif args.command == "weed":
            print(s3.weed_binary())
        else:
            print_env()
    except ProcessError as exc:
        log(f"error: {exc}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
