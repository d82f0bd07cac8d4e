"""Processes the scripts start in the background and stop later, from another invocation.

A process is known by its pid file alone: ``spawn`` starts it in a session of its own
(its pid is its process group's id), appends its output to a log file and writes the pid
file; ``stop`` and ``kill`` find it again by that file. A pid file whose process is gone,
or whose pid now names a process that leads no group of its own (the pid was reused), is
stale: nothing is signalled and the file is removed. ``wait_until`` polls a health check
with a deadline; when the deadline passes, or the process exits first, the error names the
log and shows its tail.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

#: How much of a log an error shows.
TAIL_CHARS = 2000


class ProcessError(RuntimeError):
    """A process could not be run, started or stopped; the message names it."""


class NotHealthy(ProcessError):
    """A process did not become healthy in time, or exited first; the message shows its
    log's tail."""


def alive(pid: int) -> bool:
    """Running: a zombie (exited, not yet reaped by its parent) counts as gone."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def children(pid: int) -> list[int]:
    """The pids whose parent is ``pid``."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def leads_group(pid: int) -> bool:
    """Whether ``pid`` is its process group's leader, as a process ``spawn`` started is."""
    try:
        return os.getpgid(pid) == pid
    except ProcessLookupError:
        return False


def log_tail(path: Path, chars: int = TAIL_CHARS) -> str:
    return path.read_text(errors="replace")[-chars:] if path.exists() else "(no log)"


@dataclass(frozen=True, slots=True)
class PidFile:
    """A file holding a pid (its first word), written by ``spawn`` or by a daemon itself."""

    path: Path

    def read(self) -> int | None:
        """The pid written there, whether or not it runs; None without a file or a pid."""
        try:
            return int(self.path.read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def running(self) -> int | None:
        """The pid, if that process is alive."""
        pid = self.read()
        return pid if pid is not None and alive(pid) else None

    def write(self, pid: int) -> None:
        self.path.write_text(str(pid))

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)


def spawn(args: Sequence[str], *, log: Path, pidfile: PidFile,
          env: Mapping[str, str] | None = None, cwd: Path | None = None) -> int:
    """Start ``args`` in a new session, detached from this one (stdin from /dev/null,
    stdout and stderr appended to ``log``), with ``env`` added to this environment; writes
    and returns its pid."""
    with log.open("ab") as out:
        try:
            proc = subprocess.Popen(
                list(args), stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True, env={**os.environ, **(env or {})}, cwd=cwd,
            )
        except OSError as exc:
            raise ProcessError(f"{args[0]}: could not start: {exc}") from exc
    pid = proc.pid
    pidfile.write(pid)
    # Never waited for: it outlives this invocation by design, which is what Popen's
    # "still running" ResourceWarning is about (subprocess still reaps it if it exits first).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        del proc
    return pid


def wait_until(what: str, check: Callable[[], bool], *, seconds: float, log: Path,
               process: PidFile | None = None, interval: float = 0.25) -> None:
    """Poll ``check`` until it holds; raise ``NotHealthy`` after ``seconds``, or as soon as
    the process of ``process`` is gone (it will not become healthy then)."""
    deadline = time.monotonic() + seconds
    while True:
        if check():
            return
        if process is not None and process.running() is None:
            raise NotHealthy(f"{what} exited before it became healthy; log {log}:\n"
                             f"{log_tail(log)}")
        if time.monotonic() >= deadline:
            raise NotHealthy(f"{what} did not become healthy in {seconds:.0f}s; log {log}:\n"
                             f"{log_tail(log)}")
        time.sleep(interval)


def _target(pidfile: PidFile, group: bool) -> int | None:
    """The running pid of ``pidfile``, or None (and the stale file removed)."""
    pid = pidfile.running()
    if pid is None or (group and not leads_group(pid)):
        pidfile.remove()
        return None
    return pid


def _signal(pid: int, sig: signal.Signals, group: bool) -> None:
    with contextlib.suppress(ProcessLookupError):  # it exited meanwhile
        if group:
            os.killpg(pid, sig)
        else:
            os.kill(pid, sig)


def _gone(pid: int, seconds: float, interval: float = 0.1) -> bool:
    deadline = time.monotonic() + seconds
    while alive(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)
    return True


def stop(pidfile: PidFile, *, grace: float = 20.0, group: bool = True,
         escalate: bool = True) -> bool:
    """SIGTERM the process of ``pidfile`` (its whole group with ``group``) and wait up to
    ``grace`` seconds for it to exit; then SIGKILL it with ``escalate``. The pid file is
    removed once the process is gone. Returns whether it is gone (True when nothing ran)."""
    pid = _target(pidfile, group)
    if pid is None:
        return True
    _signal(pid, signal.SIGTERM, group)
    if not _gone(pid, grace):
        if not escalate:
            return False
        _signal(pid, signal.SIGKILL, group)
        if not _gone(pid, 5.0):
            raise ProcessError(f"pid {pid} ({pidfile.path}) outlived SIGKILL")
    pidfile.remove()
    return True


def kill(what: str, pidfile: PidFile, *, log: Path, seconds: float = 30.0,
         group: bool = True) -> None:
    """SIGKILL the process of ``pidfile`` (no clean shutdown), wait until it is gone and
    remove the pid file."""
    pid = _target(pidfile, group)
    if pid is None:
        return
    _signal(pid, signal.SIGKILL, group)
    if not _gone(pid, seconds):
        raise ProcessError(f"{what} (pid {pid}) outlived SIGKILL by {seconds:.0f}s; log {log}:\n"
                           f"{log_tail(log)}")
    pidfile.remove()


def run(what: str, args: Sequence[str], *, env: Mapping[str, str] | None = None,
        cwd: Path | None = None, input: str | None = None) -> str:
    """Run ``args`` to completion and return its stdout; ``ProcessError`` names ``what``, the
    command and the end of what it printed when it cannot start or fails. ``env`` is the
    whole environment (None: this one's)."""
    try:
        done = subprocess.run(list(args), check=True, capture_output=True, text=True, env=env,
                              cwd=cwd, input=input)
    except (OSError, subprocess.CalledProcessError) as exc:
        output = getattr(exc, "stderr", "") or getattr(exc, "stdout", "") or str(exc)
        raise ProcessError(f"{what}: {' '.join(args[:3])} failed: "
                           f"{output.strip()[-TAIL_CHARS:]}") from exc
    return done.stdout


def status_line(name: str, running: bool, *details: str) -> str:
    """One status line: the name, ``running`` or ``stopped``, and the details, tab-separated."""
    return "\t".join((name, "running" if running else "stopped", *details))
