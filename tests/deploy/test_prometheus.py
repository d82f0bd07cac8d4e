"""A real Prometheus (Debian's) scrapes every service, started as users start them, each
with ``--metrics-port``, while a run flows through ingest, Kafka and a projector; the
figures are read back with PromQL over Prometheus's HTTP API: every target up, the points
ingest accepted and the points the projector wrote both equal what was sent, the projector's
lag back to 0, refusals by reason, web's requests by route template (never by raw path),
the pools' gauges, a Node control call by its outcome, the exporter idle; the project's
alert rules loaded and evaluated on the real series without error, none firing.

The projector and the exporter use a database of their own (``fresh``) and the projector a
consumer group placed at the topic's end, so what they count is this run's alone (as long as
no other test produces batches meanwhile: the services tier runs one test at a time)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import grpc
import httpx
import pytest
import yaml

from tests.support import prometheus
from tests.support.calls import push
from tests.support.environment import BIN, Endpoints, free_port
from tests.support.kafka import group_at_end
from tests.support.processes import Process, launch_env, start_control, start_ingest
from tests.support.truth import member_batch
from tuneplane.common.tokens import TokenSigner
from tuneplane.node.v1 import node_pb2 as npb
from tuneplane.node.v1 import node_pb2_grpc as npb_grpc
from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1 import telemetry_pb2_grpc as pb_grpc
from tuneplane.telemetry.v1.identity import MemberKey

JOBS = ("tuneplane-ingest", "tuneplane-control", "tuneplane-projector", "tuneplane-web",
        "tuneplane-exporter")
BATCHES = 20
POINTS_PER_BATCH = 500
ATTEMPTS_ROUTE = "/api/v1/runs/{run_id}/attempts"


def one(value: float) -> dict[str, float]:
    """The answer of an aggregation without ``by``: one sample, no labels."""
    return {"": value}


@pytest.fixture
def stack() -> Iterator[ExitStack]:
    """Stops every process the test started, whatever happens."""
    with ExitStack() as stack:
        yield stack


def started(stack: ExitStack, process: Process) -> Process:
    stack.callback(process.stop)
    return process


async def test_prometheus_scrapes_every_service_and_the_figures_add_up(
        initialised: Endpoints, tls_dir: Path, fresh: str, user_token: str, run_id: str,
        tmp_path: Path, stack: ExitStack) -> None:
    metrics = {job: free_port() for job in JOBS}
    group = f"prometheus-{uuid.uuid4().hex[:8]}"
    await group_at_end(initialised.kafka_bootstrap, group)
    ingest = started(stack, start_ingest(
        initialised, tls_dir, free_port(), tmp_path / "ingest.log",
        "--metrics-port", str(metrics["tuneplane-ingest"])))
    started(stack, Process(
        [str(BIN / "tuneplane-projector"), "worker", "--metrics-port",
         str(metrics["tuneplane-projector"])], tmp_path / "projector.log", ready="Worker ready",
        env={"TUNEPLANE_DATABASE_URL": fresh, "TUNEPLANE_PROJECTOR_GROUP": group}))
    web_port = free_port()
    started(stack, Process(
        [str(BIN / "tuneplane-web"), "--host", "127.0.0.1", "--port", str(web_port),
         "--metrics-port", str(metrics["tuneplane-web"])], tmp_path / "web.log",
        ready="Uvicorn running on", port=web_port))
    control = started(stack, start_control(
        tls_dir, free_port(), tmp_path / "control.log",
        launch_env(ingest.port, tmp_path / "spool", Path("/opt/tuneplane/artifacts", "0" * 64)),
        "--metrics-port", str(metrics["tuneplane-control"])))
    started(stack, Process(
        [str(BIN / "tuneplane-exporter"), "--metrics-port", str(metrics["tuneplane-exporter"]),
         "--config-path", str(tmp_path / "otelcol.yaml"), "--group", f"{group}-exporter",
         "--poll-seconds", "1"], tmp_path / "exporter.log",
        ready="exporter watching destinations", env={"TUNEPLANE_DATABASE_URL": fresh}))
    (tmp_path / "prometheus").mkdir()
    prom = prometheus.Prometheus(started(stack, prometheus.start(tmp_path / "prometheus",
                                                                 metrics)))

    # Every target scraped before the run starts, so that each counter's rise is seen.
    prom.until('up{job=~"tuneplane-.*"}',
               lambda f: len(f) == len(JOBS) and set(f.values()) == {1.0})

    # A run through ingest over TLS, and one call refused for want of a token.
    member = MemberKey(run_id, 1, "rank-0")
    token = TokenSigner(initialised.jwt_secret).issue_workload(member, now=time.time(),
                                                                ttl_seconds=600)
    ca = grpc.ssl_channel_credentials((tls_dir / "ca.pem").read_bytes())
    async with grpc.aio.secure_channel(f"localhost:{ingest.port}", ca) as channel:
        stub: pb_grpc.TelemetryIngestAsyncStub = pb_grpc.TelemetryIngestStub(channel)
        for sequence in range(1, BATCHES + 1):
            reply = await push(stub, member_batch(member, sequence, POINTS_PER_BATCH), token)
            assert reply.outcome == pb.PushBatchReply.OUTCOME_DURABLE
            assert reply.points == POINTS_PER_BATCH
        with pytest.raises(grpc.aio.AioRpcError) as unsigned:
            await stub.PushBatch(pb.PushBatchRequest(batch=member_batch(
                member, BATCHES + 1, 10).SerializeToString()), timeout=30)
        assert unsigned.value.code() == grpc.StatusCode.UNAUTHENTICATED
    # A node with a wrong enrollment token.
    async with grpc.aio.secure_channel(f"localhost:{control.port}", ca) as channel:
        node: npb_grpc.NodeControlAsyncStub = npb_grpc.NodeControlStub(channel)
        with pytest.raises(grpc.aio.AioRpcError) as enrolled:
            await node.Enroll(npb.EnrollRequest(enrollment_token="not-a-token",
                                                hostname="h"), timeout=30)
        assert enrolled.value.code() == grpc.StatusCode.UNAUTHENTICATED
    # Three runs' attempts asked of web: one route, three paths.
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{web_port}") as client:
        assert (await client.get("/healthz")).status_code == 200
        for asked in ("a", "b", "c"):
            await client.get(f"/api/v1/runs/{run_id}-{asked}/attempts",
                             headers={"Authorization": f"Bearer {user_token}"})

    points = float(BATCHES * POINTS_PER_BATCH)
    # Ingest: what it made durable, how long Kafka took for each, what it refused.
    prom.until("sum(tuneplane_ingest_accepted_points_total)", lambda f: f == one(points))
    prom.until("sum(tuneplane_ingest_accepted_batches_total)", lambda f: f == one(BATCHES))
    prom.until('sum(tuneplane_ingest_rpcs_total{method="PushBatch", code="OK"})',
               lambda f: f == one(BATCHES))
    prom.until("sum(tuneplane_ingest_kafka_produce_duration_seconds_count)",
               lambda f: f == one(BATCHES))
    prom.until("sum by (reason) (tuneplane_ingest_refused_batches_total)",
               lambda f: f == {"reason=UNAUTHENTICATED": 1.0})
    # The projector wrote every point once, caught up, and its pool is seen.
    prom.until("sum(tuneplane_projector_points_total)", lambda f: f == one(points))
    prom.until('sum(tuneplane_projector_batches_total{outcome="applied"})',
               lambda f: f == one(BATCHES))
    prom.until("sum(tuneplane_projector_consumer_lag_records)", lambda f: f == one(0))
    prom.until("sum(increase(tuneplane_projector_points_total[5m])) > 0", bool)  # points/s
    prom.until("sum(tuneplane_projector_db_pool_max_connections)", lambda f: f == one(4))
    # Web: by route template, never by path; its pool.
    answered = prom.until(f'sum(tuneplane_web_requests_total{{route="{ATTEMPTS_ROUTE}"}})',
                          lambda f: f == one(3))
    assert answered
    routes = prom.query("count by (route) (tuneplane_web_requests_total)")
    assert not [r for r in routes if run_id in r], routes
    assert "route=/healthz" in routes
    prom.until("sum(tuneplane_web_db_pool_max_connections)", lambda f: f == one(8))
    # Node control: the call by its outcome.
    prom.until('sum by (method, code) (tuneplane_control_rpcs_total)',
               lambda f: f == {"code=UNAUTHENTICATED,method=Enroll": 1.0})
    # The exporter: no destination, so export is off and nothing is consumed.
    prom.until("sum(tuneplane_exporter_export_enabled)", lambda f: f == one(0))
    prom.until('sum(tuneplane_exporter_destinations{state="composed"})', lambda f: f == one(0))

    # The alert rules evaluate on these series without error, and none fires.
    def evaluated() -> list[dict[str, object]]:
        return [rule for group in prom.get("rules")["groups"] for rule in group["rules"]]

    deadline = time.monotonic() + 60
    while not all(r["health"] == "ok" for r in evaluated()):
        assert time.monotonic() < deadline, evaluated()
        time.sleep(0.5)
    declared = yaml.safe_load(prometheus.ALERTS.read_text())["groups"]
    assert len(evaluated()) == sum(len(group["rules"]) for group in declared)
    assert prom.query('ALERTS{alertstate="firing"}') == {}
