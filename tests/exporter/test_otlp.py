"""Curves as OTLP metrics: a gauge per tag, a point per point, the identity as attributes."""

from __future__ import annotations

import math

from tests.support.truth import member_batch
from tuneplane.common.kafka.message import Message
from tuneplane.exporter.otlp import MAX_REQUEST_BYTES, metric_name, points, to_requests
from tuneplane.exporter.service import decode
from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1.identity import MemberKey
from tuneplane.telemetry.v1.limits import MAX_BATCH_POINTS, MAX_NAME_BYTES


def test_each_chunk_becomes_a_gauge_with_the_identity_on_every_point() -> None:
    batch = member_batch(MemberKey("run-1", 2, "rank-3"), 1, 10, tags=2)
    (request,) = to_requests(batch)
    assert points(request) == 10
    (scope,) = request.resource_metrics[0].scope_metrics
    assert [m.name for m in scope.metrics] == ["tag0", "tag1"]
    point = scope.metrics[1].gauge.data_points[0]
    attributes = {a.key: a.value for a in point.attributes}
    assert attributes["run"].string_value == "run-1"
    assert attributes["attempt"].int_value == 2
    assert attributes["member"].string_value == "rank-3"
    assert attributes["source"].string_value == "train"
    assert attributes["tag"].string_value == "tag1"
    chunk = batch.chunks[1]
    assert point.time_unix_nano == int(chunk.wall_times[0] * 1e9)
    assert point.as_double == chunk.values[0]
    assert "run_path" not in attributes  # a root series keeps the attributes it always had


def test_a_tensorboard_runs_series_carries_its_run_path() -> None:
    batch = member_batch(MemberKey("run-1", 2, "rank-3"), 1, 10, tags=2)
    batch.chunks[1].run_path = "lr_group/a"
    (request,) = to_requests(batch)
    root, run = request.resource_metrics[0].scope_metrics[0].metrics
    assert {a.key for a in root.gauge.data_points[0].attributes} == {
        "run", "attempt", "member", "source", "tag"}
    assert {a.key: a.value.string_value for a in run.gauge.data_points[0].attributes
            }["run_path"] == "lr_group/a"


def test_non_finite_values_and_odd_tags_survive() -> None:
    batch = pb.Batch(identity=pb.BatchIdentity(run_id="r", attempt=1, member="m"), chunks=[
        pb.SeriesChunk(source="s", tag="9 loss (train)", steps=[1, 2], wall_times=[1.0, 2.0],
                       values=[math.nan, -math.inf])])
    (request,) = to_requests(batch)
    (metric,) = request.resource_metrics[0].scope_metrics[0].metrics
    assert metric.name == "tag_9_loss__train_"
    assert metric_name("train/loss.avg") == "train/loss.avg"
    assert len(metric_name("x" * 400)) == 255
    values = [p.as_double for p in metric.gauge.data_points]
    assert math.isnan(values[0])
    assert values[1] == -math.inf
    tag = {a.key: a.value.string_value for a in metric.gauge.data_points[0].attributes}["tag"]
    assert tag == "9 loss (train)"


def test_a_batch_without_curves_exports_no_metric() -> None:
    batch = pb.Batch(identity=pb.BatchIdentity(run_id="r", attempt=1, member="m"))
    batch.rich.add(source="s", tag="img", kind=pb.RichRecord.KIND_IMAGE, payload=b"x")
    assert sum(points(r) for r in to_requests(batch)) == 0


def test_points_whose_wall_time_no_data_point_can_carry_are_left_out_not_fatal() -> None:
    """Ingest keeps wall times as sent (NaN, infinite, before 1970, after 2554); a data
    point's time is unsigned nanoseconds. Such a batch must not stop the exporter."""
    walls = [math.nan, math.inf, -math.inf, -1.0, 1e12, 1.7e9]
    batch = pb.Batch(identity=pb.BatchIdentity(run_id="r", attempt=1, member="m",
                                               spool_epoch="e", sequence=1),
                     chunks=[pb.SeriesChunk(source="s", tag="t", steps=list(range(len(walls))),
                                            wall_times=walls, values=[1.0] * len(walls))])
    data = batch.SerializeToString()
    decoded = decode(Message(0, 0, b"r/1/m/e-1", data))
    assert (decoded.run_id, decoded.attempt) == ("r", 1)
    (request,) = decoded.requests
    (metric,) = request.resource_metrics[0].scope_metrics[0].metrics
    assert [p.time_unix_nano for p in metric.gauge.data_points] == [int(1.7e9 * 1e9)]


def test_a_batch_at_its_bounds_goes_in_requests_the_collector_takes() -> None:
    """Every point carries the identity as attributes: a batch at the point bound is more
    than the collector's OTLP receiver takes in one message (4 MiB, gRPC's default)."""
    name = "n" * MAX_NAME_BYTES
    member = MemberKey(name, 1, name)
    per_chunk = MAX_BATCH_POINTS // 10
    batch = pb.Batch(identity=pb.BatchIdentity(run_id=name, attempt=1, member=name,
                                               spool_epoch="e", sequence=1),
                     chunks=[pb.SeriesChunk(source=name, tag=f"{t}{name}"[:MAX_NAME_BYTES],
                                            steps=list(range(per_chunk)),
                                            wall_times=[1.7e9 + s for s in range(per_chunk)],
                                            values=[float(s) for s in range(per_chunk)])
                             for t in range(10)])
    requests = to_requests(batch)
    assert all(r.ByteSize() <= MAX_REQUEST_BYTES < 4 * 1024 * 1024 for r in requests)
    assert sum(points(r) for r in requests) == MAX_BATCH_POINTS
    sent = [(m.name, p.time_unix_nano, p.as_double) for r in requests
            for m in r.resource_metrics[0].scope_metrics[0].metrics for p in m.gauge.data_points]
    assert sent == [(metric_name(c.tag), int(w * 1e9), v) for c in batch.chunks
                    for w, v in zip(c.wall_times, c.values, strict=True)]
    last = requests[-1].resource_metrics[0].scope_metrics[0].metrics[-1].gauge.data_points[-1]
    assert {a.key: a.value.string_value for a in last.attributes}["member"] == member.member
