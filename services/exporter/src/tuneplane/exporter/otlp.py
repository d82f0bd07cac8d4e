"""Curves as OpenTelemetry metrics: each series chunk of a batch becomes a gauge named by
its tag, one data point per point, with run, attempt, member, source and tag as the
point's attributes (and ``run_path``, TensorBoard's run below the log directory, when the
series is not the log directory's own: a root series keeps the attributes it always had)
and the point's wall time as its time.

Wall times are kept as the job sent them (ingest and the read models take NaN, infinities
and any double); a data point's time is nanoseconds since the epoch in an unsigned 64-bit
field. A point whose wall time that cannot hold (not a number, before 1970, after 2554) is
left out of the export, never allowed to stop it: it stays in the read models. A batch
goes to the collector in as many requests as keep each under ``MAX_REQUEST_BYTES``."""

from __future__ import annotations

import re
from collections.abc import Iterator

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, InstrumentationScope, KeyValue
from opentelemetry.proto.metrics.v1.metrics_pb2 import (
    Gauge,
    Metric,
    NumberDataPoint,
    ResourceMetrics,
    ScopeMetrics,
)
from opentelemetry.proto.resource.v1.resource_pb2 import Resource

from tuneplane.telemetry.v1 import telemetry_pb2 as pb

NOT_IN_A_NAME = re.compile(r"[^A-Za-z0-9_.\-/]")
SCOPE = InstrumentationScope(name="tuneplane", version="1")
RESOURCE = Resource(attributes=[KeyValue(key="service.name",
                                         value=AnyValue(string_value="tuneplane"))])


def metric_name(tag: str) -> str:
    """An OpenTelemetry instrument name: ASCII letters first, at most 255 characters."""
    name = NOT_IN_A_NAME.sub("_", tag)
    if not name[:1].isalpha():
        name = "tag_" + name
    return name[:255]


#: Largest request sent to the composed collector. Its OTLP receiver refuses a message over
#: 4 MiB (gRPC's default) with RESOURCE_EXHAUSTED, which the exporter retries, so one batch
#: too big for it would stop the export. Every point carries the identity and its series
#: as attributes: a batch at its point bound is more than that, up to ~100 MiB as OTLP.
MAX_REQUEST_BYTES = 2 * 1024 * 1024
#: Upper bounds of what frames the points in a request: the resource and scope, a
#: metric's name (255 bytes at most) and gauge, a point's field tag and length.
ENVELOPE_BYTES, METRIC_BYTES, POINT_FRAMING_BYTES = 1024, 320, 8
#: A data point's time is a fixed64: nanoseconds below this.
NANOS_BOUND = float(2**64)


def nanos(wall: float) -> int | None:
    """``wall`` (seconds since the epoch) as a data point's time, or None when it is none."""
    scaled = wall * 1e9
    return int(scaled) if 0 <= scaled < NANOS_BOUND else None  # NaN fails too


def text(key: str, value: str) -> KeyValue:
    return KeyValue(key=key, value=AnyValue(string_value=value))


def gauges(batch: pb.Batch) -> Iterator[tuple[str, int, list[NumberDataPoint]]]:
    """Per chunk with a point to export: its metric's name, the most bytes one of its points
    takes in a request, and its points."""
    identity = batch.identity
    common = [text("run", identity.run_id),
              KeyValue(key="attempt", value=AnyValue(int_value=identity.attempt)),
              text("member", identity.member)]
    for chunk in batch.chunks:
        attributes = [*common, text("source", chunk.source), text("tag", chunk.tag)]
        if chunk.run_path:
            attributes.append(text("run_path", chunk.run_path))
        times = [nanos(wall) for wall in chunk.wall_times]
        points = [NumberDataPoint(attributes=attributes, time_unix_nano=time, as_double=value)
                  for time, value in zip(times, chunk.values, strict=True) if time is not None]
        if points:
            widest = NumberDataPoint(attributes=attributes, time_unix_nano=1, as_double=1.0)
            yield metric_name(chunk.tag), widest.ByteSize() + POINT_FRAMING_BYTES, points


def request(metrics: list[Metric]) -> ExportMetricsServiceRequest:
    return ExportMetricsServiceRequest(resource_metrics=[ResourceMetrics(
        resource=RESOURCE, scope_metrics=[ScopeMetrics(scope=SCOPE, metrics=metrics)])])


def to_requests(batch: pb.Batch) -> list[ExportMetricsServiceRequest]:
    """The batch's curves, in order, in requests of at most ``MAX_REQUEST_BYTES`` each
    (a chunk too big for one continues in the next); none without a point to export."""
    requests: list[ExportMetricsServiceRequest] = []
    metrics: list[Metric] = []
    room = MAX_REQUEST_BYTES - ENVELOPE_BYTES
    for name, size, points in gauges(batch):
        while points:
            fit = (room - METRIC_BYTES) // size
            if fit < 1:  # full: what is left goes in the next request
                requests.append(request(metrics))
                metrics, room = [], MAX_REQUEST_BYTES - ENVELOPE_BYTES
                continue
            taken, points = points[:fit], points[fit:]
            metrics.append(Metric(name=name, gauge=Gauge(data_points=taken)))
            room -= METRIC_BYTES + size * len(taken)
    if metrics:
        requests.append(request(metrics))
    return requests


def points(request: ExportMetricsServiceRequest) -> int:
    return sum(len(m.gauge.data_points) for rm in request.resource_metrics
               for sm in rm.scope_metrics for m in sm.metrics)
