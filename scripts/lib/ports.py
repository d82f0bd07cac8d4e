"""Ports on loopback: whether one is free or answers, and ports picked free once and kept.

A ``PortFile`` is a json object of name → port. The first request for a name picks a free
port for it, at random from ``listening_range`` (below the kernel's ephemeral range, so no
client's outgoing connection takes a service's port between two starts) and never one the
file already holds; the file is rewritten whole (a partial file renamed over it), under an
exclusive lock on its folder, so two scripts adding names at once keep both.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import random
import socket
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from scripts.lib.processes import ProcessError

LOOPBACK = "127.0.0.1"


class NoFreePort(ProcessError):
    """Every candidate port is taken."""


def listening_range() -> range:
    """Ports to choose from: 10000 up to the kernel's ephemeral range (at least to 20000)."""
    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    return range(10_000, max(low, 20_000))


def port_free(port: int, host: str = LOOPBACK) -> bool:
    """Whether ``port`` can be bound on ``host`` now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def port_open(port: int, host: str = LOOPBACK, timeout: float = 0.5) -> bool:
    """Whether something accepts connections on ``port``."""
    with socket.socket() as sock:
        sock.settimeout(timeout)
        return sock.connect_ex((host, port)) == 0


def free_port(host: str = LOOPBACK) -> int:
    """A port free now, chosen by the kernel (from the ephemeral range); not kept."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


@dataclass(frozen=True, slots=True)
class PortFile:
    """Ports kept by name in a json file (``.services/ports.json``)."""

    path: Path

    def saved(self) -> dict[str, int]:
        if not self.path.exists():
            return {}
        return {str(name): int(port) for name, port in json.loads(self.path.read_text()).items()}

    def ports(self, names: Sequence[str], candidates: Iterable[int] | None = None,
              ) -> dict[str, int]:
        """The ports of ``names``, in that order; a name the file lacks gets a free port
        from ``candidates`` (default: ``listening_range``, shuffled), added to the file."""
        saved = self.saved()
        if any(name not in saved for name in names):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with _locked(self.path.parent):
                saved = self.saved()  # another script may have added some meanwhile
                missing = [name for name in names if name not in saved]
                if missing:
                    saved.update(self._pick(missing, saved, candidates))
                    partial = self.path.with_suffix(".partial")
                    partial.write_text(json.dumps(saved, indent=1) + "\n")
                    partial.rename(self.path)
        return {name: saved[name] for name in names}

    @staticmethod
    def _pick(missing: list[str], saved: dict[str, int],
              candidates: Iterable[int] | None) -> dict[str, int]:
        if candidates is None:
            pool = list(listening_range())
            random.SystemRandom().shuffle(pool)
            candidates = pool
        taken = set(saved.values())
        picked: dict[str, int] = {}
        wanted = iter(missing)
        name = next(wanted, None)
        for port in candidates:
            if name is None:
                break
            if port not in taken and port_free(port):
                picked[name] = port
                taken.add(port)
                name = next(wanted, None)
        if name is not None:
            raise NoFreePort(f"no free port left for {name} ({len(picked)} of "
                             f"{len(missing)} found)")
        return picked
