"""TensorBoard's purge of orphaned data, applied to stored chunks: the canonical view.

TensorBoard's plugin event accumulator (``purge_orphaned_data=True``, what its multiplexer
serves) reads a run's files in order and purges by one of two rules, chosen by the run's
``file_version`` so far (the collector applies the choice and stores the markers):

- version 2 or more (every current writer): the run's first ``SessionLog.START`` starts
  it, and every later one, at step s, drops every value read before it, of every tag of
  the run, whose step is >= s; out-of-order points stay.
- older files: a Summary event whose step is below the previous Summary event's drops the
  values read before it, of its own tags (the marker's ``tags``), whose step is >= its step.

Read order is batch order within a member: the collector reads a run's files one after the
other and opens a batch with each marker, so a marker follows every point of earlier
batches and precedes every point of its own batch and later ones. A chunk's points are
therefore cut at the lowest step of the markers in later batches; whole chunks are kept or
dropped from their step range, and only a chunk the cut falls inside is unpacked.
"""

from __future__ import annotations

import bisect
import math
import posixpath
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from tuneplane.web.read.downsample import Arrays

#: (first sealed_at of the batch's spool epoch, epoch, sequence): a member's read order.
BatchOrder = tuple[float, str, int]

SEMANTICS = "tensorboard"


def batch_order(batch_id: str, epoch_starts: Mapping[str, float]) -> BatchOrder:
    """Where a batch stands in its member's read order (ids are ``<epoch>-<sequence>``)."""
    epoch, _, sequence = batch_id.rpartition("-")
    return (epoch_starts.get(epoch, math.inf), epoch, int(sequence))


@dataclass(frozen=True, slots=True)
class Marker:
    """A purge at ``step``, read in batch ``batch_id``: a restart (``SessionLog.START``, no
    ``tags``) or an out-of-order step of older files, which purges its ``tags`` only."""

    batch_id: str
    file: str
    step: int
    index: int = 0  # its place among its batch's markers
    tags: tuple[str, ...] = ()


def markers_of_series(markers: Iterable[Marker], run_path: str, tag: str) -> list[Marker]:
    """The markers that purge one series of a TensorBoard run: those read from a file of its
    directory, restarts and its tag's out-of-order steps."""
    return [m for m in markers
            if posixpath.dirname(m.file) == run_path and (not m.tags or tag in m.tags)]


def cuts(batch_ids: Iterable[str], markers: Iterable[Marker],
         epoch_starts: Mapping[str, float]) -> dict[str, int]:
    """batch id → the step from which its points are purged (batches with no cut absent),
    by the ``markers`` of one series; the first restart in read order starts the run, it
    purges nothing."""
    placed = sorted((batch_order(m.batch_id, epoch_starts), m.index, m.step, not m.tags)
                    for m in markers)
    first = next((i for i, (_, _, _, restart) in enumerate(placed) if restart), None)
    ordered = [p for i, p in enumerate(placed) if i != first]
    if not ordered:
        return {}
    keys = [key for key, _, _, _ in ordered]
    suffix_min = [step for _, _, step, _ in ordered]
    for i in range(len(suffix_min) - 2, -1, -1):
        suffix_min[i] = min(suffix_min[i], suffix_min[i + 1])
    found: dict[str, int] = {}
    for batch_id in batch_ids:
        after = bisect.bisect_right(keys, batch_order(batch_id, epoch_starts))
        if after < len(keys):
            found[batch_id] = suffix_min[after]
    return found


def kept(arrays: Arrays, cut: int) -> Arrays:
    """A chunk's points that survive a cut at ``cut``."""
    steps, wall_times, values = arrays
    keep = [i for i, step in enumerate(steps) if step < cut]
    return ([steps[i] for i in keep], [wall_times[i] for i in keep], [values[i] for i in keep])
