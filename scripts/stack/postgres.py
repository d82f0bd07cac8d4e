"""PostgreSQL from the machine's server binaries (Debian's ``postgresql`` package, installed
when absent), run by ``pg_ctl`` with its data in ``.services/pg``; the database
``tuneplane`` is created at the first start."""

from __future__ import annotations

import contextlib
import glob
import hashlib
import os
import shutil
import signal
import subprocess
from pathlib import Path

from scripts.lib.ports import port_open
from scripts.lib.processes import PidFile, alive, children, run, wait_until
from scripts.stack.common import DATA, ServiceError, log, ports


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
            postmaster = PidFile(outside / "data" / "postmaster.pid").running()
            if postmaster is not None:
                raise ServiceError(f"postgres: a server from an earlier checkout still runs on "
                                   f"{outside}; stop it (pg_ctl -D {outside}/data stop)")
            log(f"postgres: removing {outside}, left by an earlier checkout at this path")
            shutil.rmtree(outside)
        outside.mkdir(mode=0o755)
        root.symlink_to(outside)
    return root


def psql(bindir: Path, port: int) -> list[str]:
    return [str(bindir / "psql"), "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "-tAc"]


def start() -> None:
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
    query = psql(bindir, port)
    exists = subprocess.run([*query, "SELECT 1 FROM pg_database WHERE datname='tuneplane'"],
                            capture_output=True, text=True, check=False)
    if exists.stdout.strip() != "1":
        run("postgres", [*query, "CREATE DATABASE tuneplane"])
    wait_until("postgres", lambda: subprocess.run([*query, "SELECT 1"], capture_output=True,
                                                  check=False).returncode == 0,
               seconds=30, log=logfile)


def running() -> bool:
    return (DATA / "pg" / "data" / "postmaster.pid").exists() and port_open(ports()["postgres"])


def kill() -> None:
    """SIGKILL the postmaster and every server process at once, like a power cut would."""
    root = (DATA / "pg").resolve()
    pidfile = PidFile(root / "data" / "postmaster.pid")
    postmaster = pidfile.read()
    if postmaster is None:
        return
    for pid in [postmaster, *children(postmaster)]:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    port = ports()["postgres"]
    wait_until("postgres", lambda: not port_open(port) and not alive(postmaster), seconds=30,
               log=root / "postgres.log")
    # Dead, perhaps a zombie not yet reaped: its locks would look held to the next start.
    pidfile.remove()
    for lock in (root / "sock").glob(".s.PGSQL.*"):
        lock.unlink(missing_ok=True)


def stop() -> None:
    data = (DATA / "pg").resolve() / "data"
    if (data / "postmaster.pid").exists():
        subprocess.run(as_postgres([str(pg_bin() / "pg_ctl"), "-D", str(data), "-m", "fast",
                                    "-w", "stop"]), capture_output=True, check=False)
