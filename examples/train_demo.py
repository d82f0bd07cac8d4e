"""A stand-in training job for the demo, writing what real training code writes:

    python examples/train_demo.py OUT_DIR [--steps 2000] [--seconds 6]

- ``OUT_DIR/metrics.jsonl``: one JSON line per step (``train/loss``, ``train/accuracy``,
  ``train/lr``), flushed as it goes, so a reader beside it sees a growing file with, at
  times, a half-written last line;
- ``OUT_DIR/tb/``: TensorBoard event files written by tensorboardX: scalars
  (``eval/loss``, ``eval/accuracy``), an ``add_scalars`` group (``losses`` with ``train`` and
  ``eval``, which TensorBoard draws as one chart of two runs), a sample image and a weight
  histogram every 100 steps.

At the end it prints one JSON line: how many scalar points, images and histograms it
wrote. Nothing here knows about Tuneplane: the collector beside it reads these files.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import time
from pathlib import Path

import numpy as np
from tensorboardX import SummaryWriter

JSONL_TAGS = 3
EVAL_EVERY = 20
MEDIA_EVERY = 100


def sample(step: int, steps: int, size: int = 64) -> np.ndarray:
    """An RGB image (HWC, uint8) that sharpens as training goes: a ring over noise."""
    rng = np.random.default_rng(step)
    y, x = np.mgrid[0:size, 0:size] / size - 0.5
    ring = np.exp(-((np.hypot(x, y) - 0.3) ** 2) / 0.004)
    clarity = step / max(steps - 1, 1)
    gray = np.clip(clarity * ring + (1 - clarity) * rng.random((size, size)), 0, 1)
    image = np.stack([gray, gray * 0.6 + 0.2 * clarity, 1 - gray * 0.5], axis=-1)
    return (image * 255).astype(np.uint8)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path, help="directory to write metrics.jsonl and tb/ in")
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=6.0, help="how long the run lasts")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(7)
    weights = np.random.default_rng(7)
    pause = args.seconds / args.steps
    counts = {"scalar_points": 0, "images": 0, "histograms": 0}
    writer = SummaryWriter(str(args.out / "tb"), flush_secs=1)
    with (args.out / "metrics.jsonl").open("w", buffering=1) as out:
        for step in range(args.steps):
            progress = step / args.steps
            loss = 2.5 * math.exp(-4 * progress) + 0.1 + rng.gauss(0, 0.02)
            metrics = {"train/loss": round(loss, 6),
                       "train/accuracy": round(min(0.99, 1 - loss / 2.7), 6),
                       "train/lr": 3e-4 * 0.5 * (1 + math.cos(math.pi * progress))}
            line = json.dumps({"step": step, "wall_time": time.time(), "metrics": metrics})
            half = len(line) // 2
            out.write(line[:half])  # a reader may see this half line; it must wait for the rest
            out.write(line[half:] + "\n")
            counts["scalar_points"] += JSONL_TAGS
            if step % EVAL_EVERY == 0:
                eval_loss = loss * 1.1 + 0.05
                writer.add_scalar("eval/loss", eval_loss, step)
                accuracy = max(0.0, min(0.98, 1 - eval_loss / 2.7))
                writer.add_scalar("eval/accuracy", accuracy, step)
                writer.add_scalars("losses", {"train": loss, "eval": eval_loss}, step)
                counts["scalar_points"] += 4
            if step % MEDIA_EVERY == 0:
                writer.add_image("samples/reconstruction", sample(step, args.steps), step,
                                 dataformats="HWC")
                writer.add_histogram("weights/layer1",
                                     weights.normal(progress, 1 - 0.6 * progress, 4000), step)
                counts["images"] += 1
                counts["histograms"] += 1
            time.sleep(pause)
    writer.close()
    print(json.dumps(counts), flush=True)


if __name__ == "__main__":
    main()
