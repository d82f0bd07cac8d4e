"""A stand-in training program for the Kubernetes launch tests, run in each pod of an
Indexed Job by the image's python3 (standard library only: its source is the container's
command). Rank ``JOB_COMPLETION_INDEX`` writes ``rank-<i>/metrics.jsonl`` (JSONL, float64)
and ``rank-<i>/tb`` (one TensorBoard event file of float32 scalars, TFRecord-framed with
masked CRC-32C), in five bursts ``TRAINER_PAUSE`` seconds apart (0.3); SIGTERM ends it with
status 143. ``truth`` says what each holds (``steps``: of the first steps only)."""

from __future__ import annotations

import json
import os
import signal
import struct
import sys
import time

STEPS = 600
BURSTS = 5
WALL0 = 1.7e9


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 & -(crc & 1))
    return crc ^ 0xFFFFFFFF


def masked(data: bytes) -> int:
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def frame(data: bytes) -> bytes:
    length = struct.pack("<Q", len(data))
    return (length + struct.pack("<I", masked(length)) + data
            + struct.pack("<I", masked(data)))


def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def message(number: int, payload: bytes) -> bytes:
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def event(step: int, wall: float, tag: str | None = None, value: float = 0.0) -> bytes:
    """An Event: wall_time (1), step (2), and file_version (3) or one simple_value (5)."""
    head = b"\x09" + struct.pack("<d", wall) + b"\x10" + varint(step)
    if tag is None:
        return head + message(3, b"brain.Event:2")
    summary_value = message(1, tag.encode()) + b"\x15" + struct.pack("<f", value)
    return head + message(5, message(1, summary_value))


def value(rank: int, tag: str, step: int) -> float:
    return (step * 0.25 + rank) / (3.0 if tag == "loss" else 7.0)


def truth(rank: int, steps: int = STEPS
          ) -> dict[str, dict[tuple[str, str], list[tuple[int, float, float]]]]:
    """What rank ``rank`` wrote of its first ``steps``, by source id then (run path, tag):
    (step, wall, value)."""
    float32 = {s: struct.unpack("<f", struct.pack("<f", value(rank, "loss", s)))[0]
               for s in range(steps)}
    return {"metrics": {("", tag): [(s, WALL0 + s, value(rank, tag, s)) for s in range(steps)]
                        for tag in ("loss", "accuracy")},
            "tb": {("", "loss"): [(s, WALL0 + s, float32[s]) for s in range(steps)]}}


def stopped(signum: int, frame: object) -> None:
    """SIGTERM ends the training as a launcher's would (as PID 1 it is ignored otherwise)."""
    print("stopped by SIGTERM", flush=True)
    sys.exit(143)


def main() -> int:
    signal.signal(signal.SIGTERM, stopped)
    rank = int(os.environ["JOB_COMPLETION_INDEX"])
    member = os.environ["TUNEPLANE_MEMBER"]
    assert member == f"rank-{rank}", member
    os.makedirs(f"rank-{rank}/tb", exist_ok=True)
    per = STEPS // BURSTS
    with open(f"rank-{rank}/metrics.jsonl", "w") as jsonl, \
            open(f"rank-{rank}/tb/events.out.tfevents.{int(WALL0)}.{member}", "wb") as tb:
        tb.write(frame(event(0, WALL0)))
        for burst in range(BURSTS):
            for step in range(burst * per, (burst + 1) * per):
                jsonl.write(json.dumps({"step": step, "wall_time": WALL0 + step, "metrics": {
                    tag: value(rank, tag, step) for tag in ("loss", "accuracy")}}) + "\n")
                tb.write(frame(event(step, WALL0 + step, "loss", value(rank, "loss", step))))
            jsonl.flush()
            tb.flush()
            print(f"{member}: burst {burst} written", flush=True)
            time.sleep(float(os.environ.get("TRAINER_PAUSE", "0.3")))
    print(f"{member}: {STEPS} steps written", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
