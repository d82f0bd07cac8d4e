"""Curves as OpenTelemetry metrics: each series chunk of a batch becomes a gauge named by
its tag, one data point per point, with run, attempt, member, source and tag as the
point's attributes and the point's wall time as its time.

Wall times are kept as the job sent them (ingest and the read models take NaN, infinities
and any double); a data point's time is nanoseconds since the epoch in an unsigned 64-bit
field. A point whose wall time that cannot hold (not a number, before 1970, after 2554) is
left out of the export, never allowed to stop it: it stays in the read models."""

from __future__ import annotations

import re

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


#: A data point's time is a fixed64: nanoseconds below this.
NANOS_BOUND = float(2**64)


def nanos(wall: float) -> int | None:
    """``wall`` (seconds since the epoch) as a data point's time, or None when it is none."""
    scaled = wall * 1e9
    return int(scaled) if 0 <= scaled < NANOS_BOUND else None  # NaN fails too


def text(key: str, value: str) -> KeyValue:
    return KeyValue(key=key, value=AnyValue(string_value=value))


def to_request(batch: pb.Batch) -> ExportMetricsServiceRequest:
    identity = batch.identity
    common = [text("run", identity.run_id),
              KeyValue(key="attempt", value=AnyValue(int_value=identity.attempt)),
              text("member", identity.member)]
    metrics = []
    for chunk in batch.chunks:
        attributes = [*common, text("source", chunk.source), text("tag", chunk.tag)]
        times = [nanos(wall) for wall in chunk.wall_times]
        points = [NumberDataPoint(attributes=attributes, time_unix_nano=time, as_double=value)
                  for time, value in zip(times, chunk.values, strict=True) if time is not None]
        if not points:
            continue
        metrics.append(Metric(name=metric_name(chunk.tag), gauge=Gauge(data_points=points)))
    return ExportMetricsServiceRequest(resource_metrics=[ResourceMetrics(
        resource=RESOURCE, scope_metrics=[ScopeMetrics(scope=SCOPE, metrics=metrics)])])


def points(request: ExportMetricsServiceRequest) -> int:
    return sum(len(m.gauge.data_points) for rm in request.resource_metrics
               for sm in rm.scope_metrics for m in sm.metrics)
