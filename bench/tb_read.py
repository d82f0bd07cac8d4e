"""TensorBoard event-file reading: the collector against TensorBoard's own reader, and the
collector's cost while it follows a growing file.

    uv run python bench/tb_read.py [--events 1000000] [--follow-seconds 20]

The collector is the static binary (collector/binary, x86_64 musl) as scripts/collector-binary
builds it into TUNEPLANE_COLLECTOR_BINARY_DIR (default ~/.cache/tuneplane/cargo-target).

1. One file of N scalar events (TF1 ``simple_value``, as PyTorch writes them) is read by
   TensorBoard's ``EventFileLoader`` (parse only), by the collector's ``read --summary``
   (the same read steps as ``run``, with no spool), and by the collector's ``run`` with
   ingest unreachable: framing, CRC checks, decoding into scalar columns and sealing in its
   SQLite spool, in batches of 10,000 points, until its spool says the file is read to its
   end (polled every 5 ms); events/s and the ratio.
2. ``tuneplane-collector run`` follows a file growing at 10,000 points/s and sends to a
   real ingest (services must be up: ``eval "$(scripts/services up)"``); its CPU (share of
   one core) and peak RSS (VmHWM) are read from /proc.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tensorboard.backend.event_processing.event_file_loader import EventFileLoader
from tensorboard.compat.proto import event_pb2, summary_pb2

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.e2e import read_and_seal
from tests.support.collector_binary import HOST_TARGET, binary
from tests.support.credentials import workload_token
from tests.support.environment import Endpoints, free_port, run_admin
from tests.support.kafka import group_at_end
from tests.support.processes import collector_args, start_ingest
from tests.support.truth import frame
from tuneplane.common.gateway import tls
from tuneplane.telemetry.v1.identity import MemberKey


def events(first: int, count: int) -> bytes:
    return b"".join(frame(event_pb2.Event(
        step=step, wall_time=1.7e9 + step, summary=summary_pb2.Summary(value=[
            summary_pb2.Summary.Value(tag="train/loss", simple_value=1.0 / (step + 1))]),
    ).SerializeToString()) for step in range(first, first + count))


def read_with_tensorboard(path: Path) -> tuple[int, float]:
    started = time.perf_counter()
    count = sum(1 for _ in EventFileLoader(str(path)).Load())
    return count, time.perf_counter() - started


def read_with_ours(path: Path, work: Path) -> float:
    """Seconds from starting the collector on ``path``'s directory (ingest unreachable) to
    ``path`` sealed to its end in its spool."""
    work.mkdir(parents=True, exist_ok=True)
    (work / "token").write_text("not-a-token\n")
    tls.generate(["localhost"], now=dt.datetime.now(dt.UTC)).write(work / "tls")
    spool = work / "spool-read"
    args = collector_args(free_port(), work / "tls", work / "token", MemberKey("r", 1, "m"),
                          spool, {}, "--max-batch-points", "10000", "--tensorboard",
                          f"tb={path.parent}")
    return read_and_seal(args, spool, path, work / "read.log")


def decode_with_ours(path: Path, count: int) -> float:
    """Seconds the collector's ``read --summary`` takes on ``path``'s directory: the reading
    ``run`` does (framing, CRC-32C, decoding into batch columns) with no spool; the best of
    three runs, each checked to have read all ``count`` points."""
    times = []
    for _ in range(3):
        started = time.perf_counter()
        done = subprocess.run([str(binary(HOST_TARGET)), "read", "--summary", str(path.parent)],
                              capture_output=True, check=True)
        times.append(time.perf_counter() - started)
        total = json.loads(done.stdout.splitlines()[-1])
        assert total["points"] == count, total
    return min(times)


def thread_cpu(pid: int) -> dict[str, int]:
    """Each thread's time on a CPU in nanoseconds (``/proc/PID/task/TID/schedstat``, exact,
    where ``/proc/PID/stat`` counts whole clock ticks: 10 ms, 0.05 % of a core over 20 s)."""
    return {task.name: int((task / "schedstat").read_text().split()[0])
            for task in Path(f"/proc/{pid}/task").iterdir()}


def cpu_seconds(before: dict[str, int], after: dict[str, int]) -> float:
    """CPU seconds of a process between two ``thread_cpu`` readings (``after`` holding each
    thread's last reading, one that ended since included: see ``latest``); a thread
    started in between counts from zero."""
    return sum(after[tid] - before.get(tid, 0) for tid in after) / 1e9


def latest(seen: dict[str, int], pid: int) -> dict[str, int]:
    """``seen`` with each live thread's reading now: a thread that ends (tokio's idle
    blocking threads do, ten seconds after their last task) keeps its last reading, at
    most one poll's time short."""
    return {**seen, **thread_cpu(pid)}


def memory_mib(pid: int, *fields: str) -> list[float]:
    """Fields of /proc/PID/status, /proc/PID/smaps_rollup (kB), in MiB."""
    found: dict[str, float] = {}
    for name in ("status", "smaps_rollup"):
        for line in Path(f"/proc/{pid}/{name}").read_text().splitlines():
            key, _, rest = line.partition(":")
            if key in fields and rest.strip().endswith("kB"):
                found[key] = int(rest.split()[0]) / 1024
    return [found.get(f, 0.0) for f in fields]


def mappings_mib(pid: int, most: int = 10) -> list[tuple[str, float]]:
    """The largest resident parts of a process: each file's mappings together, anonymous
    mappings by kind ([heap], [stack], [anon] for malloc arenas and thread stacks)."""
    rss: dict[str, float] = {}
    name = ""
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        head = line.split()
        if "-" in head[0] and ":" not in head[0]:
            name = Path(head[5]).name if len(head) > 5 else "[anon]"
        elif head[0] == "Rss:":
            rss[name] = rss.get(name, 0.0) + int(head[1]) / 1024
    return sorted(rss.items(), key=lambda item: -item[1])[:most]


def follow(work: Path, seconds: float, program: Path, name: str,
           detail: bool = False) -> tuple[float, float]:
    """Follows with ``program`` (a collector's ``tuneplane-collector``); its CPU share of one
    core and peak RSS in MiB, printed as ``name``."""
    endpoints = Endpoints.from_environ(os.environ)
    run_admin(endpoints, "init")
    work = work / name
    work.mkdir(parents=True)
    tls_dir = work / "tls"
    tls.generate(["localhost"], now=dt.datetime.now(dt.UTC)).write(tls_dir)
    # A group at the topic's end for ingest to ask about a new spool (GetCheckpoints): the
    # default group, which nothing consumes here, would hold the sender back.
    group = asyncio.run(group_at_end(endpoints.kafka_bootstrap,
                                     f"bench-follow-{name}-{time.time_ns()}"))
    ingest = start_ingest(endpoints, tls_dir, free_port(), work / "ingest.log", env=group)
    logdir = work / "growing"
    logdir.mkdir()
    path = logdir / "events.out.tfevents.1.bench"
    path.write_bytes(b"")
    member = MemberKey(f"bench-follow-{name}-{int(time.time())}", 1, "rank-0")
    token = workload_token(endpoints, member, work / "token")
    args = collector_args(ingest.port, tls_dir, token, member, work / "spool", {},
                          command=[str(program)])
    collector = subprocess.Popen([*args, "--tensorboard", f"tb={logdir}", "--loglevel",
                                  "WARNING"])
    try:
        time.sleep(1.0)
        start_cpu, started, step = thread_cpu(collector.pid), time.monotonic(), 0
        seen = start_cpu
        while (elapsed := time.monotonic() - started) < seconds:
            due = int(elapsed * 10_000)
            if due > step:
                with path.open("ab") as out:
                    out.write(events(step, due - step))
                step = due
            time.sleep(0.1)
            seen = latest(seen, collector.pid)
        cpu = cpu_seconds(start_cpu, latest(seen, collector.pid)) / seconds
        peak, anon, files = memory_mib(collector.pid, "VmHWM", "RssAnon", "RssFile")
        print(f"follow      {name}: {step:,} points in {seconds:.0f} s at 10,000 points/s: "
              f"collector CPU {cpu * 100:.2f}% of one core, peak RSS {peak:.1f} MiB "
              f"(at the end: {anon:.1f} MiB anonymous, {files:.1f} MiB of files)")
        if detail:
            threads = len(list(Path(f"/proc/{collector.pid}/task").iterdir()))
            print(f"            {threads} threads; largest resident: " + ", ".join(
                f"{mapped} {mib:.1f}" for mapped, mib in mappings_mib(collector.pid)))
        return cpu, peak
    finally:
        collector.terminate()
        collector.wait(timeout=60)
        ingest.stop()


def read(path: Path, count: int) -> None:
    path.parent.mkdir()
    with path.open("wb") as out:
        for first in range(0, count, 100_000):
            out.write(events(first, min(100_000, count - first)))
    print(f"{count:,} scalar events, {path.stat().st_size / 1e6:.1f} MB")
    theirs, their_time = read_with_tensorboard(path)
    assert theirs == count, theirs
    print(f"tensorboard {theirs / their_time:>12,.0f} events/s  (EventFileLoader, parse only)")
    decode_time = decode_with_ours(path, count)
    print(f"tuneplane   {count / decode_time:>12,.0f} events/s  (read --summary: the collector's "
          "framing, CRC-32C and decoding to batch columns, no spool; best of 3)")
    my_time = read_with_ours(path, path.parent.parent / "read")
    print(f"tuneplane   {count / my_time:>12,.0f} events/s  (the collector's start, framing, "
          "CRC-32C, decode to columns, sealed in its spool)")
    print(f"ratio       {their_time / my_time:.1f}x TensorBoard's loader")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--follow-seconds", type=float, default=20.0)
    parser.add_argument("--memory-detail", action="store_true",
                        help="also print the collector's threads and largest mappings")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="tuneplane-tbbench-"))
    if args.events > 0:
        read(work / "logs" / "events.out.tfevents.1.bench", args.events)
    if args.follow_seconds > 0:
        follow(work, args.follow_seconds, binary(HOST_TARGET), "binary", args.memory_detail)


if __name__ == "__main__":
    main()
