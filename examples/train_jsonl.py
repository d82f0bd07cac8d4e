"""A stand-in training job: writes JSONL metrics the way a training loop would.

    python examples/train_jsonl.py OUT.jsonl [--steps 2000] [--seconds 4]

One line per step, flushed as it goes, so a collector reading beside it sees a
growing file with, at times, a half-written last line.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out")
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=4.0, help="how long the run lasts")
    args = parser.parse_args()
    rng = random.Random(7)
    pause = args.seconds / args.steps
    with open(args.out, "w", buffering=1) as out:
        for step in range(args.steps):
            progress = step / args.steps
            loss = 2.5 * math.exp(-4 * progress) + 0.1 + rng.gauss(0, 0.02)
            metrics = {
                "train/loss": round(loss, 6),
                "train/accuracy": round(min(0.99, 1 - loss / 2.7), 6),
                "train/lr": 3e-4 * 0.5 * (1 + math.cos(math.pi * progress)),
            }
            line = json.dumps({"step": step, "wall_time": time.time(), "metrics": metrics})
            half = len(line) // 2
            out.write(line[:half])  # a reader may see this half line; it must wait for the rest
            out.write(line[half:] + "\n")
            time.sleep(pause)


if __name__ == "__main__":
    main()
