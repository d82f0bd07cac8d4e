"""CPU time (user + system, from ``/proc``) of every process a bench's pipeline runs on:
the collectors it starts and reaps, the services it starts (ingest, the projector), and
the local Kafka broker and PostgreSQL server that ``scripts/services`` runs, each process
with its descendants (PostgreSQL's backends come and go: a backend that exits is counted
through its parent's reaped-children time). Read before and after a stage, the difference
is what the stage cost, per component and per million points.

Services that are not local (``.services`` holds no pid for them) are said to be not
measured, never counted as zero."""

from __future__ import annotations

import os
import resource
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")
#: Where scripts/services keeps its processes' pids.
SERVICES = Path(os.environ.get("TUNEPLANE_SERVICES_DIR",
                               Path(__file__).resolve().parent.parent / ".services"))


def _stat(pid: int) -> list[str]:
    text = Path(f"/proc/{pid}/stat").read_text()
    return text[text.rindex(")") + 2:].split()  # the fields after the command's name


def _children() -> dict[int, list[int]]:
    """Every live process's children, by parent pid."""
    found: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                found.setdefault(int(_stat(int(entry.name))[1]), []).append(int(entry.name))
            except (OSError, ValueError, IndexError):  # gone meanwhile
                continue
    return found


def tree_seconds(pids: Iterable[int]) -> float:
    """CPU seconds of ``pids`` and all their descendants, live or reaped."""
    children, total = _children(), 0
    todo = list(pids)
    while todo:
        pid = todo.pop()
        try:
            fields = _stat(pid)
        except OSError:
            continue
        # utime, stime, cutime, cstime: fields 14-17 of stat, 11-14 after the name
        total += sum(int(f) for f in fields[11:15])
        todo.extend(children.get(pid, []))
    return total / TICK


def reaped_children_seconds() -> float:
    """CPU seconds of this process's children that have exited and been waited for."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def pid_file(path: Path) -> list[int]:
    """The pid a file's first line holds (none: no file, or no such process)."""
    try:
        pid = int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return []
    return [pid] if Path(f"/proc/{pid}").exists() else []


def local_services() -> dict[str, list[int]]:
    """The pids of the local Kafka broker(s) and PostgreSQL server, by component."""
    brokers = [pid for path in sorted(SERVICES.glob("kafka*.pid")) for pid in pid_file(path)]
    return {"kafka": brokers, "postgresql": pid_file(SERVICES / "pg" / "data" / "postmaster.pid")}


@dataclass
class Meter:
    """Components' CPU seconds: each a function that reads its running total."""
    readers: dict[str, Callable[[], float]] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    _started: dict[str, float] = field(default_factory=dict)

    @classmethod
    def pipeline(cls, services: dict[str, int]) -> Meter:
        """Collectors (this process's reaped children), ``services`` (name: pid) and the
        local Kafka and PostgreSQL."""
        meter = cls({"collector": reaped_children_seconds})
        for name, pid in services.items():
            meter.readers[name] = partial(tree_seconds, [pid])
        for name, pids in local_services().items():
            if pids:
                meter.readers[name] = partial(tree_seconds, pids)
            else:
                meter.missing.append(name)
        return meter

    def start(self) -> None:
        self._started = {name: read() for name, read in self.readers.items()}

    def used(self) -> dict[str, float]:
        """Seconds each component used since ``start``."""
        return {name: read() - self._started[name] for name, read in self.readers.items()}

    def summary(self, used: dict[str, float], points: int) -> str:
        """Each component's core-seconds per million points, on one line."""
        per = 1e6 / max(points, 1)
        return ", ".join(f"{name} {seconds * per:.2f}" for name, seconds in used.items())

    def lines(self, used: dict[str, float], points: int) -> list[str]:
        """One line per component and the total: core-seconds, and per million points."""
        per = 1e6 / max(points, 1)
        shown = [f"  {name:<12} {seconds:6.2f} core-s  {seconds * per:6.2f} per million points"
                 for name, seconds in sorted(used.items(), key=lambda kv: -kv[1])]
        total = sum(used.values())
        shown.append(f"  {'total':<12} {total:6.2f} core-s  {total * per:6.2f} per million "
                     "points" + (f"  (not measured, not local: {', '.join(self.missing)})"
                                 if self.missing else ""))
        return shown
