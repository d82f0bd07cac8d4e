"""A TensorBoard log directory of images, histograms, text and audio written by tensorboardX
(as training code writes it), sent through the real pipeline (collector → ingest → Kafka
→ projector → PostgreSQL and S3), and what TensorBoard's own loader reads from it."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import asyncpg
import numpy as np
from tensorboard.backend.event_processing import plugin_event_accumulator as pea
from tensorboard.util import tensor_util

from tests.support.credentials import workload_token
from tests.support.environment import Endpoints
from tests.support.processes import Process, collector_args, run_collector
from tests.support.tensorboardx import summary_writer
from tuneplane.telemetry.v1.identity import MemberKey

IMAGE_STEPS = [0, 10, 20, 30, 40, 50]
HISTOGRAM_STEPS = list(range(0, 120, 10))
TEXT_STEPS = [0, 5, 9]
AUDIO_STEPS = [0, 1]
EVAL_IMAGE_STEPS = [25, 50]
HOSTILE = "<script>document.title = 'pwned'</script><b>not bold</b>"
#: Records the log directory holds in all.
RECORDS = (len(IMAGE_STEPS) + len(HISTOGRAM_STEPS) + len(TEXT_STEPS) + len(AUDIO_STEPS)
           + len(EVAL_IMAGE_STEPS))


def picture(step: int, size: int = 48) -> np.ndarray:
    """An RGB image (HWC, uint8) that differs at every step: a diagonal band that moves
    across a gradient whose hue turns with the step."""
    y, x = np.mgrid[0:size, 0:size]
    band = (np.abs((x + y) - (step % 60) * 2 * size // 60) < size // 6)
    image = np.stack([(x * 255 // size), np.full_like(x, (step * 4) % 256),
                      (y * 255 // size)], axis=-1)
    image[band] = 255 - image[band]
    return image.astype(np.uint8)


def tone(step: int, rate: int = 8000) -> np.ndarray:
    """A quarter-second sine, its pitch by the step."""
    t = np.arange(rate // 4) / rate
    return (0.4 * np.sin(2 * np.pi * (220 + 110 * step) * t)).astype(np.float32)


def write_media_logdir(logdir: Path) -> None:
    """The root run's images, histograms, text and audio, and an ``eval`` run's images."""
    rng = np.random.default_rng(7)
    root = summary_writer(str(logdir))
    for step in IMAGE_STEPS:
        root.add_image("samples/digit", picture(step), step, dataformats="HWC")
    for step in HISTOGRAM_STEPS:
        root.add_histogram("weights/layer1", rng.normal(step / 40, 1 + step / 100, 2000), step)
    for step in TEXT_STEPS:
        root.add_text("notes", f"{HOSTILE} step {step}", step)
    for step in AUDIO_STEPS:
        root.add_audio("voice", tone(step), step, sample_rate=8000)
    root.close()
    evaluation = summary_writer(str(logdir / "eval"))
    for step in EVAL_IMAGE_STEPS:
        evaluation.add_image("samples/digit", picture(step + 5), step, dataformats="HWC")
    evaluation.close()


async def collect_media(initialised: Endpoints, ingest: Process, tls_dir: Path,
                        tmp_path: Path, db: asyncpg.Connection, member: MemberKey,
                        logdir: Path) -> None:
    """Run the collector over ``logdir`` (source ``tb``) and wait until every record of
    it is projected."""
    token = workload_token(initialised, member, tmp_path / "token")
    done = run_collector([*collector_args(ingest.port, tls_dir, token, member,
                                          tmp_path / "spool", {}), "--tensorboard",
                          f"tb={logdir}"])
    assert done.returncode == 0, done.stderr
    deadline = time.monotonic() + 120
    while await db.fetchval("SELECT count(*) FROM rich_records WHERE run_id = $1",
                            member.run_id) < RECORDS:
        assert time.monotonic() < deadline, "the log directory's records were not projected"
        await asyncio.sleep(0.2)


def tensorboard_tensors(logdir: Path, tag: str) -> list[tuple[int, np.ndarray]]:
    """(step, tensor) of the root run's ``tag`` as TensorBoard's plugins read it (TF1
    values migrated by ``data_compat``)."""
    accumulator = pea.EventAccumulator(str(logdir), size_guidance={pea.TENSORS: 0})
    accumulator.Reload()
    return [(event.step, tensor_util.make_ndarray(event.tensor_proto))
            for event in accumulator.Tensors(tag)]
