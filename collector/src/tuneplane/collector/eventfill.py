"""One read step's batch being filled from an event file's records, within its bounds.

A record is taken whole or not at all: the first that would pass a bound of the batch
(points, bytes, or a count bound of the contract) stops the read, and the next read starts
at it. Points of one-``simple_value`` events come one at a time (``point``) or, from the
compiled reader, as a run of events whose steps do not go down (``run``); every other record
is decoded (``record``). All three fill the batch exactly as reading record by record does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tuneplane.collector.draft import BatchDraft, ReadStep
from tuneplane.collector.tbevents import Decoded, PurgeState, Scalar, TagPlugins, decode
from tuneplane.telemetry.v1.limits import MAX_BATCH_SERIES

if TYPE_CHECKING:
    from tuneplane.collector._native import Frames

#: What the fast path counts a point as before it is added (a point and a tag's share).
POINT_MARGIN = 64


def refuse_oversized(decoded: Decoded, max_bytes: int, where: str, problems: list[str]) -> int:
    """Drop rich records that could never fit a batch, each with a reason; returns how many."""
    kept = [r for r in decoded.rich if BatchDraft.rich_cost(r) <= max_bytes]
    for record in decoded.rich:
        if BatchDraft.rich_cost(record) > max_bytes:
            problems.append(f"{where}: {record.tag!r} record of {record.ByteSize()} bytes is "
                            f"over the {max_bytes} byte batch bound; refused, not truncated")
    refused = len(decoded.rich) - len(kept)
    decoded.rich[:] = kept
    return refused


class EventFill:
    def __init__(self, result: ReadStep, *, source: str, file: str, plugins: TagPlugins,
                 purge: PurgeState, run_refused: str | None, max_points: int,
                 max_bytes: int) -> None:
        self.result, self.draft = result, result.draft
        self.source, self.file = source, file
        self.plugins, self.purge = plugins, purge
        self.run_refused = run_refused
        self.max_points, self.max_bytes = max_points, max_bytes
        self.skipped = 0  # scalar values of a refused run path
        self._decoded = Decoded()

    def in_order(self, step: int) -> bool:
        """Whether a simple event at ``step`` purges nothing (else it is decoded)."""
        return self.purge.restarts() or step >= self.purge.most_recent_step

    def point(self, scalar: Scalar) -> bool:
        """Add the point of a simple event in order; False when the batch is full first."""
        draft = self.draft
        if (self._full() or (len(draft.series) >= MAX_BATCH_SERIES and
                             draft.crowded((scalar,)))) and not draft.empty():
            return False
        self.purge.most_recent_step = scalar[1]
        if self.run_refused:
            self.skipped += 1
        else:
            draft.add_point(*scalar)
        return True

    def run(self, run: Frames, first: int, end: int) -> int:
        """Add the simple events ``first..end`` (steps not going down); returns the index of
        the first one the batch had no room for (``end`` when none)."""
        if not self.in_order(run.step(first)):  # it purges: decoded, as a marker
            if not self.record(run.offset(first), run.data(first)):
                return first
            first += 1
        draft = self.draft
        if self.run_refused:  # nothing is added, so the bounds stand as they are
            if first < end:
                if self._full() and not draft.empty():
                    return first
                self.skipped += end - first
                self.purge.most_recent_step = run.step(end - 1)
            return end
        new = [index for index, tag in run.first_tags(first, end) if tag not in draft.series]
        at = first
        for stop in [*new, end]:
            if at < stop:  # events of tags in the batch already: one bound check for all
                fits = min(stop, at + self._room())
                if fits > at:
                    for tag, steps, wall_times, values in run.columns(at, fits):
                        draft.extend(tag, steps, wall_times, values)
                    self.purge.most_recent_step = run.step(fits - 1)
                if fits < stop:
                    return fits
            if stop == end:
                break
            ((tag, steps, wall_times, values),) = run.columns(stop, stop + 1)
            if not self.point((tag, steps[0], wall_times[0], values[0])):
                return stop
            at = stop + 1
        return end

    def _full(self) -> bool:
        """Whether the batch is at its point bound, or one more point would pass its byte
        bound."""
        draft = self.draft
        return draft.points >= self.max_points or \
            draft.approx_bytes + POINT_MARGIN > self.max_bytes

    def _room(self) -> int:
        """How many points of tags in the batch already fit before a bound stops them."""
        draft = self.draft  # not empty: it holds their series
        if len(draft.series) >= MAX_BATCH_SERIES and draft.crowded():
            return 0
        spare = self.max_bytes - POINT_MARGIN - draft.approx_bytes
        return max(0, min(self.max_points - draft.points, spare // draft.POINT_BYTES + 1))

    def record(self, offset: int, data: bytes) -> bool:
        """Decode any other record into the batch; False when it does not fit (and the purge
        state is as before it: the next read decodes it again)."""
        draft, decoded, result, purge = self.draft, self._decoded, self.result, self.purge
        decoded.clear()
        before = (purge.file_version, purge.most_recent_step)
        decode(data, source=self.source, file=self.file, offset=offset, plugins=self.plugins,
               state=purge, out=decoded)
        dropped = len(decoded.scalars) if self.run_refused else 0
        if dropped:
            decoded.scalars.clear()
        cost = len(decoded.scalars) * POINT_MARGIN  # a point, and its share of a chunk's names
        if decoded.problems or decoded.rich or decoded.session_starts:
            result.problems += decoded.problems
            refused = refuse_oversized(decoded, self.max_bytes, f"{self.file}@{offset}",
                                       result.problems)
            if refused:
                result.rejected["over the batch bound"] += refused
            cost += sum(draft.rich_cost(r) for r in decoded.rich)
        # A purge marker opens its batch: every point of earlier batches was read before it
        # and every point of its batch after it, which is what applying TensorBoard's purge
        # needs.
        over = bool(decoded.session_starts) or \
            draft.points + len(decoded.scalars) > self.max_points or \
            draft.approx_bytes + cost > self.max_bytes or \
            ((decoded.rich or decoded.session_starts or
              len(draft.series) + len(decoded.scalars) > MAX_BATCH_SERIES) and
             draft.crowded(decoded.scalars, len(decoded.rich), len(decoded.session_starts)))
        if over and not draft.empty():
            purge.file_version, purge.most_recent_step = before
            return False
        self.skipped += dropped
        for tag, step, wall_time, value in decoded.scalars:
            draft.add_point(tag, step, wall_time, value)
        for rich in decoded.rich:
            draft.add_rich(rich)
        for marker in decoded.session_starts:
            draft.add_session_start(marker)
        return True
