"""A training task of a Slurm job, standard library only (it runs on the system Python as
the job's unprivileged user).

    python3 training.py --steps N --seconds S [--first-start-seconds S]
                        [--try-credentials CONTROL CA ARTIFACT]

Writes below ``$TUNEPLANE_MEMBER/`` of its working directory: ``tb/`` (a TensorBoard event
file, scalar ``loss`` = step/4, written record by record as TensorBoard's writers frame
them), ``metrics.jsonl`` (``acc`` = step/8) and ``eval.jsonl`` (``score`` = step/2); the
values are exact in float32. With ``--try-credentials`` (rank 0 only), half-way it tries
every way it knows to the job's credentials: its collector's environment, memory and
descriptors, tracing the collector, any file of its user holding a token, and the job
script's ticket, redeemed with control through the artifact's own collector.
Each outcome goes to ``attempts.json`` for the test to check.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import re
import socket
import struct
import subprocess
import tempfile
import time
from pathlib import Path

CRC_TABLE = []
for _byte in range(256):
    _crc = _byte
    for _ in range(8):
        _crc = (_crc >> 1) ^ 0x82F63B78 if _crc & 1 else _crc >> 1
    CRC_TABLE.append(_crc)


def masked_crc(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for byte in data:
        crc = CRC_TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    crc ^= 0xFFFFFFFF
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def varint(value: int) -> bytes:
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        out.append(low | (0x80 if value else 0))
        if not value:
            return bytes(out)


def field(number: int, wire: int, payload: bytes) -> bytes:
    key = varint(number << 3 | wire)
    return key + (varint(len(payload)) + payload if wire == 2 else payload)


def record(event: bytes) -> bytes:
    length = struct.pack("<Q", len(event))
    return (length + struct.pack("<I", masked_crc(length)) + event
            + struct.pack("<I", masked_crc(event)))


def scalar_event(step: int, wall_time: float, tag: str, value: float) -> bytes:
    summary_value = field(1, 2, tag.encode()) + field(2, 5, struct.pack("<f", value))
    return (field(1, 1, struct.pack("<d", wall_time)) + field(2, 0, varint(step))
            + field(5, 2, field(1, 2, summary_value)))


def collector_pids() -> list[int]:
    mine = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"slurm-node" in argv and os.stat(f"/proc/{entry}").st_uid == os.getuid():
                mine.append(int(entry))
    return mine


def outcome(path: str, how: object) -> dict[str, object]:
    try:
        got = how() if callable(how) else None
    except OSError as exc:
        return {"path": path, "errno": exc.errno, "error": str(exc)}
    return {"path": path, "succeeded": repr(got)[:200]}


def read_memory(pid: int) -> bytes:
    with open(f"/proc/{pid}/mem", "rb") as mem:
        maps = Path(f"/proc/{pid}/maps").read_text().splitlines()
        start = int(maps[0].split("-")[0], 16)
        mem.seek(start)
        return mem.read(64)


def attach(pid: int) -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.ptrace(16, pid, None, None) != 0:  # PTRACE_ATTACH
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    libc.ptrace(17, pid, None, None)  # PTRACE_DETACH
    return 0


def token_files(roots: list[Path]) -> list[str]:
    """Files of this user below ``roots`` that hold a JSON Web Token."""
    found = []
    for root in roots:
        for path in root.rglob("*") if root.is_dir() else ():
            try:
                if path.is_file() and re.search(rb"eyJ[\w-]{10,}\.eyJ", path.read_bytes()):
                    found.append(str(path))
            except OSError:
                continue
    return found


def redeem(ticket: str, control: str, ca: Path, artifact: Path) -> str:
    """Redeem ``ticket`` through the artifact's own collector, as any task of the job can run
    it: control's answer."""
    place = Path(tempfile.mkdtemp(prefix="thief-"))
    try:
        done = subprocess.run(
            [str(artifact / "tuneplane-collector"), "slurm-node", "--control", control,
             "--launch", "0", "--spool-root", str(place / "spool"), "--workdir", str(place)],
            input=ticket + "\n", capture_output=True, text=True, timeout=30, check=False,
            env={**os.environ, "TUNEPLANE_SLURM_CONTROL_CA": ca.read_text()})
    except subprocess.TimeoutExpired as exc:  # it redeemed, and ran on
        return f"REDEEMED: {exc.stdout!r:.300}"
    said = done.stdout.strip()
    if "control refused Redeem: " in said:
        return "refused: " + said.split("control refused Redeem: ", 1)[1]
    return f"REDEEMED? exit {done.returncode}: {said[:300]}"


def try_credentials(control: str, ca: Path, artifact: Path) -> dict[str, object]:
    tried: dict[str, object] = {}
    pids = collector_pids()
    tried["collectors found"] = pids
    for pid in pids:
        tried[f"collector {pid} environment"] = outcome(
            f"/proc/{pid}/environ", lambda p=pid: Path(f"/proc/{p}/environ").read_bytes())
        tried[f"collector {pid} memory"] = outcome(f"/proc/{pid}/mem",
                                                   lambda p=pid: read_memory(p))
        tried[f"collector {pid} descriptors"] = outcome(
            f"/proc/{pid}/fd", lambda p=pid: os.listdir(f"/proc/{p}/fd"))
        tried[f"collector {pid} ptrace"] = outcome(f"ptrace {pid}", lambda p=pid: attach(p))
    script = subprocess.run(["scontrol", "write", "batch_script", os.environ["SLURM_JOB_ID"],
                             "-"], capture_output=True, text=True, check=False).stdout
    tickets = re.findall(r"eyJ[\w-]+\.eyJ[\w-]+\.[\w-]+", script)
    tried["job script tickets"] = len(tickets)
    tried["ticket redeemed"] = [redeem(t, control, ca, artifact) for t in tickets]
    tried["environment tokens"] = [k for k, v in os.environ.items()
                                   if re.search(r"eyJ[\w-]{10,}\.eyJ", v)]
    scratch = Path(os.environ.get("TMPDIR", "/tmp"))
    tried["token files"] = token_files([scratch, Path.cwd()])
    return tried


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--first-start-seconds", type=float,
                        help="how long the job's first start lasts (a later start of a "
                             "requeued job lasts --seconds)")
    parser.add_argument("--try-credentials", nargs=3, metavar=("CONTROL", "CA", "ARTIFACT"))
    args = parser.parse_args()
    out = Path(os.environ["TUNEPLANE_MEMBER"])
    (out / "tb").mkdir(parents=True, exist_ok=True)
    first = not int(os.environ.get("SLURM_RESTART_COUNT") or 0)
    seconds = args.first_start_seconds if first and args.first_start_seconds else args.seconds
    pause = seconds / args.steps
    name = f"events.out.tfevents.{int(time.time())}.{socket.gethostname()}"
    with (out / "tb" / name).open("wb", buffering=0) as tb, \
            (out / "metrics.jsonl").open("w", buffering=1) as metrics, \
            (out / "eval.jsonl").open("w", buffering=1) as evals:
        tb.write(record(field(1, 1, struct.pack("<d", time.time()))
                        + field(3, 2, b"brain.Event:2")))
        for step in range(args.steps):
            tb.write(record(scalar_event(step, 1.7e9 + step, "loss", step / 4)))
            metrics.write(json.dumps({"step": step, "wall_time": 1.7e9 + step,
                                      "metrics": {"acc": step / 8}}) + "\n")
            evals.write(json.dumps({"step": step, "wall_time": 1.7e9 + step,
                                    "metrics": {"score": step / 2}}) + "\n")
            if step == args.steps // 2 and args.try_credentials and \
                    os.environ["SLURM_PROCID"] == "0":
                control, ca, artifact = args.try_credentials
                Path("attempts.json").write_text(json.dumps(
                    try_credentials(control, Path(ca), Path(artifact)), indent=2))
            time.sleep(pause)


if __name__ == "__main__":
    main()
