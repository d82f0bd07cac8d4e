"""Response shapes of the web API (they make the OpenAPI schema)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field


class Run(BaseModel):
    run_id: str
    project: str
    attempts: int
    batches: int
    points: int
    last_batch_at: datetime


class Attempt(BaseModel):
    attempt: int
    members: int
    batches: int
    points: int
    last_batch_at: datetime
    late_batches: int = Field(0, description="batches of these delivered late: after their "
                                              "collector stopped, from its spool, with a "
                                              "delivery credential")


class LateBatch(BaseModel):
    member: str
    batch_id: str
    points: int
    sealed_at: float = Field(description="when the collector sealed it (Unix seconds)")
    projected_at: datetime = Field(description="when it reached the read models")


class Member(BaseModel):
    member: str
    sources: list[str]
    series: int
    points: int = Field(description="points projected")
    last_batch_at: datetime | None = Field(description="when its last batch was projected")
    spools: int = Field(0, description="spools its batches came from: more than one when its "
                                       "spool was replaced (a host re-imaged, a spool lost), "
                                       "each new one resuming where the earlier delivered")


WallClock = Literal["written", "read", "mixed"]
WALL_CLOCK = ("whose clock the wall times are: written (the source's), read (the "
              "collector's, when it read lines that gave none: a JSONL line without "
              "wall_time), or mixed")


class Series(BaseModel):
    member: str
    source: str
    run_path: str = Field(description="TensorBoard's run: the event files' directory below "
                                      "the source's log directory; '' for the log directory "
                                      "itself and other sources")
    tag: str
    points: int
    step_min: int
    step_max: int
    wall_time: WallClock = Field(description=WALL_CLOCK)


class Bucket(BaseModel):
    step_lo: int
    step_hi: int
    count: int
    min: float | None = Field(description="smallest finite value; null when none is finite")
    max: float | None
    last: float | str = Field(description="value at the bucket's last step; NaN and "
                                          "infinities as the strings nan, inf, -inf")
    wall: float = Field(description="wall time of that last value (where the bucket sits "
                                    "on a time axis)")


class PointColumns(BaseModel):
    """An exact answer's points as columns (``format=columns``): the i-th point is
    (steps[i], walls[i], values[i])."""

    steps: list[int]
    walls: list[float]
    values: list[float | str] = Field(description="NaN and infinities as the strings nan, "
                                                  "inf, -inf")


class BucketColumns(BaseModel):
    """A reduced answer's buckets as columns (``format=columns``), one entry per bucket,
    each column as ``Bucket``'s field of that name."""

    step_lo: list[int]
    step_hi: list[int]
    count: list[int]
    min: list[float | None]
    max: list[float | None]
    last: list[float | str]
    wall: list[float]


class SeriesData(BaseModel):
    member: str
    source: str
    run_path: str = Field(description="TensorBoard's run: the event files' directory below "
                                      "the source's log directory; '' for the log directory "
                                      "itself and other sources")
    tag: str
    step_min: int
    step_max: int
    wall_first: float | None = Field(description="wall time of the series' first stored "
                                                 "point (a relative time axis starts "
                                                 "there); null when it has none")
    wall_time: WallClock = Field(description=WALL_CLOCK + ", of the points in the range")
    reduced: bool
    method: str | None = Field(description="how a reduced answer was made; null when not")
    points_in_range: int
    points_returned: int
    points: list[tuple[int, float, float | str]] | PointColumns = Field(
        description="[step, wall_time, value] when not reduced (with format=columns: "
                    "{steps, walls, values})")
    buckets: list[Bucket] | BucketColumns = Field(
        description="when reduced (with format=columns: {step_lo, step_hi, count, min, max, "
                    "last, wall})")


class CanonicalSeriesData(SeriesData):
    semantics: str = Field(description="'tensorboard': restarts (SessionLog.START) purge the "
                                       "points read before them at or above their step, per "
                                       "TensorBoard run, as TensorBoard's event accumulator "
                                       "does (in files without file_version 2, out-of-order "
                                       "steps purge their own tags instead); /scalars keeps "
                                       "them unless asked for semantics=tensorboard")
    points_purged: int = Field(description="points of the whole series the purge dropped")


class CanonicalCurve(BaseModel):
    name: str
    goal: str | None
    unit: str | None
    aggregate: bool
    series: list[CanonicalSeriesData]
    series_total: int = Field(description="members' series the curve has in all")


class TagCurve(BaseModel):
    name: str = Field(description="the tag")
    series: list[CanonicalSeriesData] = Field(description="one per member, source and "
                                                          "TensorBoard run")
    series_total: int = Field(description="series with this tag in all")


class SeriesRef(BaseModel):
    member: str
    source: str
    run_path: str = Field(description="TensorBoard's run: the event files' directory below "
                                      "the source's log directory; '' for the log directory "
                                      "itself and other sources")
    tag: str


class CanonicalIndex(BaseModel):
    mapping_frozen: bool
    curves: list[dict[str, str | bool | None]]
    unmapped: list[SeriesRef] = Field(description="series with unknown semantics")
    not_owner: list[SeriesRef] = Field(description="aggregate copies from non-owner members")


class ChartEntry(BaseModel):
    kind: Literal["curve", "tag"] = Field(description="curve: a canonical curve of the "
                                                      "frozen mapping (/curves/{name}); tag: "
                                                      "every series of a tag no mapping "
                                                      "names (/tag?tag=)")
    name: str
    key: str = Field(description="kind:name, what after takes")


class ChartSection(BaseModel):
    name: str = Field(description="its charts' name prefix, the part before the first '/' "
                                  "('' for names without one)")
    charts: int = Field(description="its charts the filter keeps")
    total: int = Field(description="its charts in all")
    entries: list[ChartEntry] | None = Field(None, description="its charts the filter "
                                                               "keeps, in order, when they "
                                                               "are at most whole in every "
                                                               "section")


class ChartSections(BaseModel):
    mapping_frozen: bool
    sections: list[ChartSection] = Field(description="those with charts the filter keeps, "
                                                     "by name, '' last")
    charts: int = Field(description="charts the filter keeps, in every section")
    total: int = Field(description="charts in every section")
    next: str | None = Field(description="more sections follow: pass this as after")


class ChartPage(BaseModel):
    charts: list[ChartEntry] = Field(description="canonical curves in the mapping's order, "
                                                 "then tags by name")
    next: str | None = Field(description="more charts follow: pass this as after")


RUN_PATH_OF_RECORD = ("TensorBoard's run: the directory of the event file the record was "
                      "read from, below the log directory; '' for the log directory itself "
                      "and other sources")


class RichRecord(BaseModel):
    member: str
    source: str
    run_path: str = Field(description=RUN_PATH_OF_RECORD)
    tag: str
    step: int
    wall_time: float
    kind: str
    plugin_name: str
    file: str
    file_offset: int
    object_key: str
    bytes: int


class RichTag(BaseModel):
    member: str
    source: str
    run_path: str = Field(description=RUN_PATH_OF_RECORD)
    tag: str
    kind: str = Field(description="image, histogram, audio, text, tensor or json")
    plugin_name: str
    records: int
    step_min: int
    step_max: int


class RichSample(BaseModel):
    member: str
    source: str
    run_path: str
    tag: str
    records: int = Field(description="the tag's records in all; at most `limit` are returned, "
                                     "spread evenly over them, the first and last included")
    steps: list[RichRecord]


class Histogram(BaseModel):
    step: int
    wall_time: float
    buckets: list[tuple[float, float, float]] = Field(
        description="[left edge, right edge, count] as TensorBoard's histograms plugin "
                    "serves them (TF1 HistogramProto migrated as TensorBoard migrates it)")


class Text(BaseModel):
    step: int
    wall_time: float
    shape: list[int] = Field(description="[] for one string; a table's [rows, columns]")
    strings: list[str] = Field(description="the tensor's strings in row-major order, as "
                                           "text (never markup)")


class Decoded(BaseModel):
    member: str
    source: str
    run_path: str
    tag: str
    records: int = Field(description="the tag's records in all (see RichSample)")
    problems: list[str] = Field(description="records that could not be read, and why; they "
                                            "are left out")


class HistogramSeries(Decoded):
    histograms: list[Histogram]


class TextSeries(Decoded):
    texts: list[Text]


class RunCreate(BaseModel):
    run_id: str | None = Field(default=None, description="default: run-<time>-<random>")
    project: str = Field(default="default", max_length=64,
                         description="the project the run belongs to (the caller edits it)")
    integration: dict[str, Any] = Field(description="the integration artifact (JSON)")


class RunCreated(BaseModel):
    run_id: str


class ManagedAttempt(BaseModel):
    attempt: int
    state: str
    started_at: datetime
    ended_at: datetime | None


class ManagedRun(BaseModel):
    run_id: str
    project: str
    created_by: str
    created_at: datetime
    attempts: list[ManagedAttempt]


class AttemptStarted(BaseModel):
    run_id: str
    attempt: int


class End(BaseModel):
    state: Literal["finished", "failed", "cancelled"] = "finished"


class Ended(BaseModel):
    ended: bool = Field(description="false when the attempt had already ended so")


class RunRow(BaseModel):
    run_id: str
    project: str
    created_at: datetime | None = Field(description="when it was created; for a run known "
                                                    "only by its telemetry, its first batch")
    attempt: int | None = Field(description="the latest attempt, managed or telemetry's")
    state: str = Field(description="the latest managed attempt's state; 'none' when the "
                                     "run has no managed attempt")
    members: int = Field(description="members that sent telemetry in the latest attempt")
    points: int
    last_batch_at: datetime | None
    columns: list[float | str | bool | None] = Field(
        default=[], description="the added columns' values, in the order asked for (null: "
                                "the run has none)")


class RunColumns(BaseModel):
    config: list[str] = Field(description="settings' keys: columns config:KEY")
    metrics: list[str] = Field(description="series tags: columns metric:TAG:last|min|max")
    names: list[str] = Field(description="canonical names of metric mappings, also "
                                         "metric:NAME:last|min|max")


class RunTable(BaseModel):
    runs: list[RunRow]
    total: int = Field(description="rows in the whole view, every page")
    columns: list[str] = Field(default=[], description="the added columns, as asked for")
