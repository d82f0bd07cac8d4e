"""The fault suite's training run: members writing TensorBoard or JSONL files that grow
while everything around them fails, and the truth every stored point is checked against."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tensorboard.compat.proto import event_pb2, summary_pb2

from tests.support.truth import frame

PIECE = 250  # steps appended at once, each piece in two writes (half-written records)
IMAGE_EVERY = 500


@dataclass(frozen=True, slots=True)
class Workload:
    root: Path
    members: int
    steps: int
    tags: int = 4

    @property
    def points(self) -> int:
        return self.members * self.steps * self.tags

    def name(self, i: int) -> str:
        return f"rank-{i}"

    def tensorboard(self, i: int) -> bool:
        return i < self.members // 2

    def source(self, i: int) -> tuple[str, Path]:
        """The member's source id and the path its collector reads."""
        base = self.root / self.name(i)
        return ("tb", base / "tb") if self.tensorboard(i) else ("train", base / "metrics.jsonl")

    def value(self, i: int, k: int, step: int) -> float:
        """Exact in float32, so TensorBoard's simple_value loses nothing."""
        return (step % 4096) / 8 + 1000 * k + i

    def truth(self) -> dict[tuple[str, str, str, int], float]:
        return {(self.name(i), self.source(i)[0], f"m{k}", step): self.value(i, k, step)
                for i in range(self.members) for k in range(self.tags)
                for step in range(self.steps)}

    def image(self, i: int, step: int) -> bytes:
        return b"\x89PNG\r\n\x1a\n" + f"{self.name(i)}@{step}".encode() * 40

    def images(self) -> dict[tuple[str, int], bytes]:
        return {(self.name(i), step): self.image(i, step) for i in range(self.members)
                if self.tensorboard(i) for step in range(0, self.steps, IMAGE_EVERY)}

    def piece(self, i: int, step0: int) -> bytes:
        steps = range(step0, min(step0 + PIECE, self.steps))
        if not self.tensorboard(i):
            return b"".join(json.dumps({"step": s, "wall_time": 1.7e9 + s, "metrics": {
                f"m{k}": self.value(i, k, s) for k in range(self.tags)}}).encode() + b"\n"
                for s in steps)
        out = []
        for s in steps:
            values = [summary_pb2.Summary.Value(tag=f"m{k}",
                                                simple_value=np.float32(self.value(i, k, s)))
                      for k in range(self.tags)]
            if s % IMAGE_EVERY == 0:
                values.append(summary_pb2.Summary.Value(tag="samples", image=summary_pb2.
                              Summary.Image(height=1, width=1, colorspace=3,
                                            encoded_image_string=self.image(i, s))))
            out.append(frame(event_pb2.Event(step=s, wall_time=1.7e9 + s, summary=summary_pb2.
                                             Summary(value=values)).SerializeToString()))
        return b"".join(out)

    def write(self, seconds: float, done: threading.Event) -> None:
        """Append every member's file piece by piece over about ``seconds``."""
        handles = []
        for i in range(self.members):
            path = self.source(i)[1]
            if self.tensorboard(i):
                path.mkdir(parents=True, exist_ok=True)
                path = path / "events.out.tfevents.1.faults"
            path.parent.mkdir(parents=True, exist_ok=True)
            handles.append(path.open("ab"))
        rounds = range(0, self.steps, PIECE)
        pause = seconds / len(rounds)
        try:
            for step0 in rounds:
                pieces = [self.piece(i, step0) for i in range(self.members)]
                for handle, piece in zip(handles, pieces, strict=True):
                    handle.write(piece[:len(piece) // 3])
                    handle.flush()
                time.sleep(pause / 2)
                for handle, piece in zip(handles, pieces, strict=True):
                    handle.write(piece[len(piece) // 3:])
                    handle.flush()
                time.sleep(pause / 2)
        finally:
            for handle in handles:
                handle.close()
            done.set()
