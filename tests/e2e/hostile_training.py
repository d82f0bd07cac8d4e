"""A training command that tries to read what it must not, then trains as usual.

    python3 hostile_training.py --state DIR --spool-root DIR [--steps N] [--seconds S]
                                [--neighbour-offset N]

Run by the node agent as the run-as user (standard library only: it runs on the system
Python). It writes ``metrics.jsonl`` (``acc`` = step/8) and ``eval.jsonl`` (``score`` =
step/2) in its working directory and, half-way, tries every way it knows to the node's
credentials: the node credential, its own token, trust bundle and launch record, another
launch's directory, the spool, the agent's, its collector's and the collector's reader's
environment, descriptors and memory, its own log. With ``--neighbour-offset`` the other
launch is its own id + N, running beside it: it waits for that launch's training process
first, then also tries its working directory, a file in it, its environment and memory,
and signalling it. Each outcome, its environment, descriptors, identity and working
directory go to ``attempts.json`` for the test to check.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

Attempt = tuple[str, Callable[[str], object]]


def outcome(attempt: Attempt) -> dict[str, object]:
    path, how = attempt
    try:
        got = how(path)
    except OSError as exc:
        return {"path": path, "errno": exc.errno, "error": str(exc)}
    return {"path": path, "succeeded": repr(got)[:200]}


def read(path: str) -> Attempt:
    return path, lambda p: Path(p).read_bytes()


def listing(path: str) -> Attempt:
    return path, os.listdir


def collector_pids(run: str, member: str) -> dict[str, int]:
    """Its collector and the collector's reader (forked, the training user's), found by
    their command line and owner (which any user may read)."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            status = Path(f"/proc/{entry}/status").read_text()
        except OSError:
            continue
        if b"--token-file" in argv and run.encode() in argv and member.encode() in argv:
            uid = int(status.split("\nUid:")[1].split()[0])
            found["collector reader" if uid == os.getuid() else "collector"] = int(entry)
    return found


def neighbour_pid(timeout: float) -> int | None:
    """The training process of the launch beside it (this program, another process),
    once it runs: any user may read a command line."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) == os.getpid():
                continue
            try:
                argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if os.fsencode(sys.argv[0]) in argv and b"--neighbour-offset" in argv:
                return int(entry)
        time.sleep(0.1)
    return None


def signalling(pid: int) -> Attempt:
    return str(pid), lambda p: os.kill(int(p), 0)  # the permission check of any signal


def neighbour(other: int, pid: int | None) -> dict[str, Attempt]:
    workdir = Path.cwd().parent / str(other)
    tries = {"neighbour working directory": listing(str(workdir)),
             "neighbour file": read(f"{workdir}/metrics.jsonl")}
    if pid is not None:
        tries |= {"neighbour environment": read(f"/proc/{pid}/environ"),
                  "neighbour memory": read(f"/proc/{pid}/mem"),
                  "neighbour signal": signalling(pid)}
    return tries


def attempts(state: str, spool_root: str, offset: int,
             neighbour_at: int | None) -> dict[str, dict[str, object]]:
    own = int(Path.cwd().name)  # the working directory is <work root>/<launch id>
    member = os.environ.get("TUNEPLANE_MEMBER", "")
    run = os.environ.get("TUNEPLANE_RUN_ID", "")
    other = own + offset if offset else own + 1 if member == "rank-0" else own - 1
    spool = f"{spool_root}/{run}/{os.environ.get('TUNEPLANE_ATTEMPT')}/{member}"
    agent = os.getppid()
    tries = {
        "node credential": read(f"{state}/node.json"),
        "own token": read(f"{state}/launches/{own}/token"),
        "own trust bundle": read(f"{state}/launches/{own}/trust-bundle.pem"),
        "own launch record": read(f"{state}/launches/{own}/launch.json"),
        "launches": listing(f"{state}/launches"),
        "other launch": listing(f"{state}/launches/{other}"),
        "other token": read(f"{state}/launches/{other}/token"),
        "spool root": listing(spool_root),
        "spool": listing(spool),
        "spool database": read(f"{spool}/spool.sqlite3"),
        "agent environment": read(f"/proc/{agent}/environ"),
        "agent descriptors": listing(f"/proc/{agent}/fd"),
        "agent memory": read(f"/proc/{agent}/mem"),
        "own log, reopened": read("/proc/self/fd/1"),
    }
    if offset:
        tries |= neighbour(other, neighbour_at)
    for name, pid in collector_pids(run, member).items():
        tries |= {f"{name} environment": read(f"/proc/{pid}/environ"),
                  f"{name} descriptors": listing(f"/proc/{pid}/fd"),
                  f"{name} memory": read(f"/proc/{pid}/mem"),
                  f"{name} working directory": listing(f"/proc/{pid}/cwd")}
    return {name: outcome(attempt) for name, attempt in tries.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--state", required=True, help="the node agent's state directory")
    parser.add_argument("--spool-root", required=True)
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--neighbour-offset", type=int, default=0,
                        help="the launch running beside it is its own id + N")
    args = parser.parse_args()
    fds = []
    for fd in sorted(int(fd) for fd in os.listdir("/proc/self/fd")):
        try:
            os.fstat(fd)  # the listing's own descriptor is closed by now
        except OSError:
            continue
        fds.append(fd)
    here = os.stat(".")
    report: dict[str, object] = {
        "uid": os.getuid(), "euid": os.geteuid(), "gid": os.getgid(),
        "groups": sorted(os.getgroups()), "cwd": os.getcwd(), "environment": dict(os.environ),
        "descriptors": fds, "workdir": {"uid": here.st_uid, "mode": here.st_mode & 0o777}}
    beside = neighbour_pid(60.0) if args.neighbour_offset else None
    report["neighbour seen"] = beside is not None
    pause = args.seconds / args.steps
    with open("metrics.jsonl", "w", buffering=1) as metrics, \
            open("eval.jsonl", "w", buffering=1) as evals:
        for step in range(args.steps):
            metrics.write(json.dumps({"step": step, "wall_time": 1.7e9 + step,
                                      "metrics": {"acc": step / 8}}) + "\n")
            evals.write(json.dumps({"step": step, "wall_time": 1.7e9 + step,
                                    "metrics": {"score": step / 2}}) + "\n")
            if step == args.steps // 2:
                report["attempts"] = attempts(args.state, args.spool_root,
                                              args.neighbour_offset, beside)
            time.sleep(pause)
    Path("attempts.json").write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
