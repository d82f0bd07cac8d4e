"""Log directories written by real TensorBoard writers, as training code writes them: each
function writes one run layout below ``logdir`` and returns nothing; what TensorBoard reads
there is the truth (``truth.tensorboard_runs``, ``truth.tensorboard_purged``)."""

from __future__ import annotations

import math
import time
from pathlib import Path


def tensorboardx_with_restarts(logdir: Path) -> None:
    """tensorboardX, two processes' worth in ``logdir``: plain scalars in the root run and
    ``add_scalars("lr_group", {"a", "b"})`` (runs ``lr_group/a`` and ``lr_group/b``). The
    first writer starts with ``purge_step=0`` (a START at 0: the run's first, it purges
    nothing); the second resumes at 150 with ``purge_step=150``, whose START purges the
    root run's steps >= 150 written before it. ``add_scalars``' writers get no START, so
    their runs keep both writers' points at 150..199."""
    from tensorboardX import SummaryWriter
    for n, steps, purge_step in ((1, range(200), 0), (2, range(150, 300), 150)):
        # The suffix keeps two writers opened within one second apart (and in order).
        writer = SummaryWriter(logdir=str(logdir), purge_step=purge_step,
                               filename_suffix=f".{n}")
        for step in steps:
            writer.add_scalar("loss", 10.0 * n + 1.0 / (step + 1), step)
            writer.add_scalars("lr_group", {"a": n * 0.99 ** step, "b": n + math.sin(step)},
                               step)
        writer.close()


def tensorboardx_resumed_once(logdir: Path) -> None:
    """tensorboardX as usually resumed: only the second writer passes ``purge_step``. Its
    START is the run's first, which TensorBoard takes as the run's start: nothing purged."""
    from tensorboardX import SummaryWriter
    first = SummaryWriter(logdir=str(logdir), filename_suffix=".1")
    for step in range(100):
        first.add_scalar("loss", float(step), step)
    first.close()
    second = SummaryWriter(logdir=str(logdir), purge_step=60, filename_suffix=".2")
    for step in range(60, 120):
        second.add_scalar("loss", 1000.0 + step, step)
    second.close()


def tensorboard_writer_resumed(logdir: Path) -> None:
    """TensorBoard's own ``tensorboard.summary.Writer`` (no TensorFlow): scalar tensors of
    the scalars plugin, two tags; a second writer resumes at 50. This writer writes no
    SessionLog, so TensorBoard keeps both writers' points at 50..99."""
    from tensorboard.summary import Writer
    for offset, steps in ((0.0, range(100)), (10.0, range(50, 150))):
        writer = Writer(str(logdir))
        for step in steps:
            writer.add_scalar("eval/loss", offset + 2.0 / (step + 1), step,
                              wall_time=1.7e9 + offset * 1000 + step)
            writer.add_scalar("eval/acc", offset + step / 150, step,
                              wall_time=1.7e9 + offset * 1000 + step + 0.5)
        writer.close()


def torch_with_restarts(logdir: Path) -> None:
    """torch's ``torch.utils.tensorboard.SummaryWriter``, as a resumed PyTorch job writes:
    both writers pass ``purge_step`` (a START each; the first is the run's start), the
    second resuming at 120, whose START purges the root run's steps >= 120 written before
    it. torch names ``add_scalars``' runs ``<tag>_<key>`` (``lr_group_a``), unlike
    tensorboardX, and gives their writers no START: they keep both writers' 120..199."""
    from torch.utils.tensorboard import SummaryWriter
    for n, steps, purge_step in ((1, range(200), 0), (2, range(120, 260), 120)):
        # torch names a file by the second, then a process-wide count of files, unpadded
        # ("...98.1" sorts after "...101.2"): a second of its own keeps them in order.
        second = int(time.time())
        while n > 1 and int(time.time()) == second:
            time.sleep(0.02)
        writer = SummaryWriter(log_dir=str(logdir), purge_step=purge_step,
                               filename_suffix=f".{n}")
        for step in steps:
            writer.add_scalar("loss", 5.0 * n + 1.0 / (step + 1), step)
            writer.add_scalars("lr_group", {"a": n * 0.98 ** step, "b": n + math.cos(step)},
                               step)
        writer.close()
