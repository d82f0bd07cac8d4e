"""A stand-in training job that writes TensorBoard event files and JSONL metrics.

    python examples/train_tensorboard.py [--steps 3000] [--seconds 6] [--out .]

Writes, under --out: ``tb/`` (TensorBoard scalars ``loss`` = step/4, through tensorboardX,
flushed as it goes), ``metrics.jsonl`` (``acc`` = step/8) and ``eval.jsonl`` (``score`` =
step/2). The values are exact in float32, so a test can compare every point. Nothing here
knows about Tuneplane: the platform's collector reads these files beside it.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from tensorboardX import SummaryWriter


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--seconds", type=float, default=6.0, help="how long the run lasts")
    parser.add_argument("--out", type=Path, default=Path("."))
    args = parser.parse_args()
    pause = args.seconds / args.steps
    writer = SummaryWriter(str(args.out / "tb"), flush_secs=1)
    with (args.out / "metrics.jsonl").open("w", buffering=1) as metrics, \
            (args.out / "eval.jsonl").open("w", buffering=1) as evals:
        for step in range(args.steps):
            writer.add_scalar("loss", step / 4, global_step=step, walltime=1.7e9 + step)
            metrics.write(json.dumps({"step": step, "wall_time": 1.7e9 + step,
                                      "metrics": {"acc": step / 8}}) + "\n")
            evals.write(json.dumps({"step": step, "wall_time": 1.7e9 + step,
                                    "metrics": {"score": step / 2}}) + "\n")
            time.sleep(pause)
    writer.close()


if __name__ == "__main__":
    main()
