"""Where the local services keep their state, and the plumbing of ``scripts.lib`` bound to it.

Data lives under ``.services/`` in the checkout (``TUNEPLANE_SERVICES_DIR``; ignored by git):
``NAME.log`` and ``NAME.pid`` of each process started in the background, and
``ports.json``, the port of every name, picked free at the first ``up`` and kept while the
data lives, so two checkouts on one machine never collide. Downloads are cached under
``~/.cache/tuneplane`` (``TUNEPLANE_CACHE_DIR``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from scripts.lib import processes
from scripts.lib.ports import PortFile
from scripts.lib.processes import PidFile, ProcessError

ROOT = Path(__file__).resolve().parent.parent.parent
DATA = Path(os.environ.get("TUNEPLANE_SERVICES_DIR", ROOT / ".services"))
CACHE = Path(os.environ.get("TUNEPLANE_CACHE_DIR", Path.home() / ".cache" / "tuneplane"))

#: Every port the local services listen on.
PORT_NAMES = ("postgres", "kafka", "kafka_controller", "s3", "s3_grpc", "weed_master",
              "weed_master_grpc", "weed_volume", "weed_volume_grpc", "weed_filer",
              "weed_filer_grpc")


class ServiceError(ProcessError):
    """A component could not be obtained or started; the message names it."""


def log(message: str) -> None:
    print(f"services: {message}", file=sys.stderr, flush=True)


def ports(names: Sequence[str] = PORT_NAMES) -> dict[str, int]:
    """The ports of ``names``, kept in ``.services/ports.json`` (scripts/oidc keeps its ports
    there too)."""
    return PortFile(DATA / "ports.json").ports(names)


def pidfile(name: str) -> PidFile:
    return PidFile(DATA / f"{name}.pid")


def logfile(name: str) -> Path:
    return DATA / f"{name}.log"


def spawn(name: str, args: Sequence[str], env: Mapping[str, str] | None = None) -> None:
    """Start ``name`` in the background: output to ``NAME.log``, pid in ``NAME.pid``."""
    processes.spawn(args, log=logfile(name), pidfile=pidfile(name), env=env)


def pid_of(name: str) -> int | None:
    """The pid of ``name``, if it runs."""
    return pidfile(name).running()


def stop_process(name: str) -> None:
    """SIGTERM ``name``'s process group, SIGKILL it after 20 s."""
    processes.stop(pidfile(name), grace=20.0)


def kill_process(name: str) -> None:
    """SIGKILL ``name``'s process group, no clean shutdown."""
    processes.kill(name, pidfile(name), log=logfile(name))
