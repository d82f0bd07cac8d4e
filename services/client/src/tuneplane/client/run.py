"""One run: its attempts, its series, and every stored point of a series.

``scalars`` follows the export's ``Link`` pages (at most a million points each, cut before a
step: every point of a step in one page): ``iter_scalars`` yields one Arrow record batch a
page, so a series of any length streams in bounded memory; ``scalars`` gathers them into
one table (or a pandas or polars frame). Points come as the service stored them, in the
order they were read: a restarted job's steps appear again, and values are bit-exact (the
export's Arrow IPC stream: int64 steps and float64 wall times and values, ``NaN`` and
``±Infinity`` included, nothing parsed).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, Literal

from tuneplane.client.client import Client, ClientError

if TYPE_CHECKING:
    import pyarrow as pa

Frame = Literal["arrow", "pandas", "polars"]


def arrow() -> Any:
    try:
        import pyarrow
        import pyarrow.ipc
    except ImportError:
        raise ClientError("scalars need pyarrow: pip install 'tuneplane-client[arrow]' "
                          "(or [pandas], [polars])") from None
    return pyarrow


class Run:
    def __init__(self, client: Client, run_id: str) -> None:
        self.client, self.run_id = client, run_id

    def __repr__(self) -> str:
        return f"Run({self.run_id!r})"

    def attempts(self) -> list[dict[str, Any]]:
        """Its attempts with telemetry: attempt, members, batches, points, last batch."""
        found: list[dict[str, Any]] = self.client.get(f"/runs/{self.run_id}/attempts").json()
        return found

    def latest(self) -> int:
        attempts = self.attempts()
        if not attempts:
            raise ClientError(f"run {self.run_id!r} has no attempt with telemetry")
        return max(int(a["attempt"]) for a in attempts)

    def series(self, attempt: int | None = None, *, member: str | None = None,
               source: str | None = None) -> list[dict[str, Any]]:
        """The attempt's series (the latest attempt by default): member, source, run path,
        tag, points, step range."""
        found: list[dict[str, Any]] = self.client.get(
            f"/runs/{self.run_id}/attempts/{attempt or self.latest()}/series",
            {"member": member, "source": source, "limit": 1000}).json()
        return found

    def iter_scalars(self, tag: str, *, attempt: int | None = None, member: str | None = None,
                     source: str | None = None, run_path: str | None = None,
                     step_min: int | None = None,
                     step_max: int | None = None) -> Iterator[pa.RecordBatch]:
        """Every stored point of the series ``tag`` names, a page at a time: ``step``,
        ``wall_time``, ``value``. ``member``, ``source`` and ``run_path`` may be left out
        when only one series of the attempt has the tag."""
        pa = arrow()
        attempt = attempt or self.latest()
        one = self._one_series(tag, attempt, member, source, run_path)
        path: str | None = f"/runs/{self.run_id}/attempts/{attempt}/scalars/export"
        params: dict[str, Any] | None = {
            "member": one["member"], "source": one["source"], "run_path": one["run_path"],
            "tag": tag, "step_min": step_min, "step_max": step_max, "format": "arrow"}
        while path is not None:
            page, following = self.client.body(path, params)
            yield from pa.ipc.open_stream(page)
            path, params = following, None

    def scalars(self, tag: str, *, attempt: int | None = None, member: str | None = None,
                source: str | None = None, run_path: str | None = None,
                step_min: int | None = None, step_max: int | None = None,
                frame: Frame = "arrow") -> Any:
        """``iter_scalars`` gathered: an Arrow table, or a pandas or polars frame."""
        pa = arrow()
        batches = list(self.iter_scalars(tag, attempt=attempt, member=member, source=source,
                                         run_path=run_path, step_min=step_min,
                                         step_max=step_max))
        table = pa.Table.from_batches(batches, schema=pa.schema([
            ("step", pa.int64()), ("wall_time", pa.float64()), ("value", pa.float64())]))
        return as_frame(table, frame)

    def history(self, tags: Sequence[str], *, attempt: int | None = None,
                member: str | None = None, frame: Frame = "pandas") -> Any:
        """The tags side by side, one row per step (a step read twice, a restart's, keeps
        its last value), as W&B's ``history()``: a pandas frame by default."""
        pa = arrow()
        attempt = attempt or self.latest()  # once, not once a tag
        wide = None
        for tag in tags:
            table = self.scalars(tag, attempt=attempt, member=member)
            last = table.group_by("step", use_threads=False).aggregate([("value", "last")])
            last = last.rename_columns(["step", tag])
            wide = last if wide is None else wide.join(last, "step", join_type="full outer")
        if wide is None:
            wide = pa.table({"step": pa.array([], pa.int64())})
        return as_frame(wide.sort_by("step"), frame)

    def _one_series(self, tag: str, attempt: int, member: str | None, source: str | None,
                    run_path: str | None) -> dict[str, Any]:
        found = [s for s in self.series(attempt, member=member, source=source)
                 if s["tag"] == tag and run_path in (None, s["run_path"])]
        if len(found) == 1:
            return found[0]
        if not found:
            raise ClientError(f"run {self.run_id!r} attempt {attempt} has no series {tag!r}"
                              + (f" of member {member!r}" if member else ""))
        names = ", ".join(f"{s['member']}/{s['source']}/{s['run_path'] or '.'}" for s in found)
        raise ClientError(f"{len(found)} series of run {self.run_id!r} attempt {attempt} are "
                          f"named {tag!r} ({names}): say member=, source= or run_path=")


def as_frame(table: pa.Table, frame: Frame) -> Any:
    if frame == "arrow":
        return table
    if frame == "pandas":
        return table.to_pandas()
    if frame == "polars":
        try:
            import polars
        except ImportError:
            raise ClientError("polars frames need polars: pip install "
                              "'tuneplane-client[polars]'") from None
        return polars.from_arrow(table)
    raise ClientError(f"frame is 'arrow', 'pandas' or 'polars', not {frame!r}")
