"""The static collector (collector/binary): ``tuneplane-collector read`` of one TensorBoard
event file and of one JSONL file, written to /dev/null. (The Python collector it replaced was
measured on the same commands beside it until it was retired: bench/README.md keeps those
figures.)

    uv run python bench/collector_binary.py [--events 1000000] [--lines 300000] [--rounds 3]

Prints, for each input, the records per second (median of the rounds) and the peak RSS of
the process (GNU time's); then the time from start to the first record of a small file;
then, for ``run`` following a file that has been quiet for a
while, the time from a line appended to that line sealed in the spool (``spool status``
polled every few ms; ingest left unreachable, so no service is needed); and the binaries'
sizes. The binaries are scripts/collector-binary's
(``TUNEPLANE_COLLECTOR_BINARY_DIR``, default ~/.cache/tuneplane/cargo-target); the aarch64
one runs under qemu here, so its figures would mean nothing and are not taken.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tensorboard.compat.proto import event_pb2, summary_pb2

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.collector_binary import binary
from tests.support.truth import frame
from tuneplane.common.gateway import tls

TARGETS = ("x86_64-unknown-linux-musl", "aarch64-unknown-linux-musl")


def write_inputs(work: Path, events: int, lines: int) -> tuple[Path, Path]:
    tb = work / "events.out.tfevents.1.bench"
    with tb.open("wb") as out:
        for step in range(events):
            out.write(frame(event_pb2.Event(step=step, wall_time=1.7e9 + step, summary=(
                summary_pb2.Summary(value=[summary_pb2.Summary.Value(
                    tag="train/loss", simple_value=1.0 / (step + 1))]))).SerializeToString()))
    jsonl = work / "metrics.jsonl"
    with jsonl.open("w") as out:
        for step in range(lines):
            out.write(json.dumps({"step": step, "wall_time": 1.7e9 + step, "metrics": {
                "train/loss": 1.0 / (step + 1), "train/lr": 3e-4, "train/acc": step / lines}})
                + "\n")
    return tb, jsonl


def timed(command: list[str]) -> tuple[float, float | None]:
    """Seconds the command took (output to /dev/null) and its peak RSS in MiB, measured by
    GNU time where it is installed (a forked Python would count its parent's pages)."""
    with tempfile.NamedTemporaryFile("r") as peak:
        measure = ["/usr/bin/time", "-f", "%M", "-o", peak.name] \
            if os.access("/usr/bin/time", os.X_OK) else []
        started = time.perf_counter()
        with open(os.devnull, "wb") as sink:
            subprocess.run([*measure, *command], stdout=sink, check=True)
        took = time.perf_counter() - started
        kib = peak.read().strip()
    return took, int(kib) / 1024 if kib.isdigit() else None


def first_record_ms(command: list[str], path: Path) -> float:
    started = time.perf_counter()
    process = subprocess.Popen([*command, "read", str(path)], stdout=subprocess.PIPE)
    assert process.stdout is not None
    process.stdout.readline()
    took = (time.perf_counter() - started) * 1000
    process.communicate()
    return took


def spool_offset(spool: Path, static: Path) -> int:
    done = subprocess.run([str(static), "spool", "status", str(spool)], capture_output=True,
                          check=False)
    shown = json.loads(done.stdout) if done.returncode == 0 else {"positions": []}
    return max((p["offset"] for p in shown["positions"]), default=-1)


def sealed_after_quiet_ms(command: list[str], static: Path, work: Path,
                          appends: int) -> list[float]:
    """``run`` follows a quiet JSONL file; each of ``appends`` times, after 1.5 s of quiet,
    one line is appended: the milliseconds until the spool holds it."""
    work.mkdir()
    dt_now = dt.datetime.now(dt.UTC)
    tls.generate(["localhost"], now=dt_now).write(work / "tls")
    (work / "token").write_text("t\n")
    source, spool = work / "quiet.jsonl", work / "spool"
    source.write_text('{"step": 0, "wall_time": 1, "metrics": {"x": 1}}\n')
    collector = subprocess.Popen(
        [*command, "run", "--run", "r", "--attempt", "1", "--member", "rank-0", "--spool",
         str(spool), "--target", "localhost:1", "--ca-file", str(work / "tls" / "ca.pem"),
         "--token-file", str(work / "token"), "--source", f"q={source}"],
        stderr=subprocess.DEVNULL, env={**os.environ, "TUNEPLANE_TELEMETRY_DRAIN_SECONDS": "1"})
    took = []
    try:
        while spool_offset(spool, static) != source.stat().st_size:
            time.sleep(0.01)
        for step in range(1, appends + 1):
            time.sleep(1.5)
            with source.open("a") as out:
                out.write(json.dumps({"step": step, "wall_time": 1 + step,
                                      "metrics": {"x": step}}) + "\n")
            started, size = time.perf_counter(), source.stat().st_size
            while spool_offset(spool, static) != size:
                time.sleep(0.002)
            took.append((time.perf_counter() - started) * 1000)
    finally:
        collector.terminate()
        collector.wait(timeout=60)
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--lines", type=int, default=300_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    static = binary(TARGETS[0])
    if not static.is_file():
        sys.exit(f"{static} is missing: run scripts/collector-binary")
    with tempfile.TemporaryDirectory(prefix="tuneplane-bench-") as tmp:
        print(f"writing {args.events:,} TensorBoard events and {args.lines:,} JSONL lines",
              flush=True)
        tb, jsonl = write_inputs(Path(tmp), args.events, args.lines)
        for name, path, count in (("TensorBoard", tb, args.events),
                                  ("JSONL", jsonl, args.lines * 3)):
            runs = [timed([str(static), "read", str(path)]) for _ in range(args.rounds)]
            seconds = statistics.median(s for s, _ in runs)
            peaks = [m for _, m in runs if m is not None]
            peak = f"{max(peaks):.1f} MiB" if peaks else "not measured (no GNU time)"
            print(f"read {name}: {count / seconds:,.0f} records/s "
                  f"(median of {args.rounds}: {seconds:.2f} s), peak RSS {peak}", flush=True)
        small = Path(tmp) / "small.jsonl"
        small.write_text('{"step": 0, "wall_time": 1, "metrics": {"x": 1}}\n')
        ms = statistics.median(first_record_ms([str(static)], small) for _ in range(5))
        print(f"start to first record: {ms:.1f} ms (median of 5)", flush=True)
        took = sealed_after_quiet_ms([str(static)], static, Path(tmp) / "quiet", 10)
        print(f"a line appended to a quiet file, sealed in the spool: median "
              f"{statistics.median(took):.0f} ms, max {max(took):.0f} ms (10 appends, each "
              "after 1.5 s of quiet)", flush=True)
    for target in TARGETS:
        print(f"binary size, {target}: {binary(target).stat().st_size / 2**20:.2f} MiB")


if __name__ == "__main__":
    main()
