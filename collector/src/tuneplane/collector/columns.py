"""Points gathered per tag as columns, and the batch built from them."""

from __future__ import annotations

from dataclasses import dataclass, field

from tuneplane.telemetry.v1 import telemetry_pb2 as pb


@dataclass(slots=True)
class Series:
    steps: list[int] = field(default_factory=list)
    wall_times: list[float] = field(default_factory=list)
    values: list[float] = field(default_factory=list)


@dataclass(slots=True)
class Columns:
    """Points of one source, one column set per tag, in read order."""

    source: str
    series: dict[str, Series] = field(default_factory=dict)
    points: int = 0
    approx_bytes: int = 0

    #: Upper bound of the encoded size of one point (three packed 8-byte numbers + varint slack).
    POINT_BYTES = 30
    #: Framing of one chunk besides its names.
    CHUNK_BYTES = 32

    def cost(self, metrics: list[tuple[str, float]]) -> int:
        """Encoded bytes that adding ``metrics`` would cost at most."""
        new_tags = sum(len(tag.encode()) + len(self.source) + self.CHUNK_BYTES
                       for tag, _ in metrics if tag not in self.series)
        return len(metrics) * self.POINT_BYTES + new_tags

    def add(self, step: int, wall_time: float, metrics: list[tuple[str, float]]) -> None:
        self.approx_bytes += self.cost(metrics)
        for tag, value in metrics:
            series = self.series.get(tag)
            if series is None:
                series = self.series[tag] = Series()
            series.steps.append(step)
            series.wall_times.append(wall_time)
            series.values.append(value)
        self.points += len(metrics)

    def chunks(self) -> list[pb.SeriesChunk]:
        return [pb.SeriesChunk(source=self.source, tag=tag, steps=s.steps,
                               wall_times=s.wall_times, values=s.values)
                for tag, s in self.series.items()]
