"""``tuneplane-ingest``: serve TelemetryIngest on the telemetry port (8444) over TLS."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys

import asyncpg

from tuneplane.common.db import TRANSIENT_ERRORS
from tuneplane.common.gateway import listener, shared_identity
from tuneplane.common.kafka.committed import GroupPosition
from tuneplane.common.metrics import exposition
from tuneplane.common.tokens import TokenSigner
from tuneplane.contract import flags
from tuneplane.contract.settings import SettingsError
from tuneplane.ingest import metrics
from tuneplane.ingest.checkpoints import Checkpoints
from tuneplane.ingest.gate import Admission
from tuneplane.ingest.inflight import CallsInFlight
from tuneplane.ingest.series import SeriesBound
from tuneplane.ingest.server import TelemetryIngest, create_server
from tuneplane.ingest.settings import IngestSettings
from tuneplane.ingest.sink import KafkaBatchSink, SinkUnavailable
from tuneplane.ingest.token_facts import PostgresFacts, Standing

log = logging.getLogger("tuneplane.ingest")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="tuneplane-ingest",
        description="Telemetry gRPC front end: accepts batches from collectors and replies "
                    "only once Kafka holds them, and refuses workload tokens of attempts "
                    "ended beyond the drain window or issued through revoked nodes. Reads "
                    "TUNEPLANE_KAFKA_BOOTSTRAP, TUNEPLANE_WEB_JWT_SECRET, "
                    "TUNEPLANE_DATABASE_URL and the TLS settings below (docs/settings.md).")
    p.add_argument("--host", default="0.0.0.0", help="address to listen on (default 0.0.0.0)")
    p.add_argument("--port", type=int, default=8444, help="telemetry port (default 8444)")
    listener.add_arguments(p)
    flags.add_to(p, IngestSettings)
    p.add_argument("--loglevel", default="INFO")
    return p


async def probe(pool: asyncpg.Pool) -> None:
    """A database that refuses ingest (a wrong password, no such database) stops it now; one
    that is unreachable only delays token lookups, which fail open meanwhile."""
    try:
        async with pool.acquire(timeout=5):
            pass
    except (TimeoutError, *TRANSIENT_ERRORS) as exc:
        log.warning("PostgreSQL unreachable at start (%r): workload token lookups fail open "
                    "until it answers", exc)


async def serve(args: argparse.Namespace, settings: IngestSettings) -> None:
    credentials = await listener.credentials(args, settings.gateway)
    exposition.serve(settings.metrics_port, args.host)
    signer = TokenSigner(settings.jwt_secret)
    sink = KafkaBatchSink(settings.kafka_bootstrap, timeout_seconds=settings.kafka_timeout)
    await sink.start()
    # min_size=0: ingest starts, and serves (failing open), while PostgreSQL is away.
    pool = await asyncpg.create_pool(settings.database_url, min_size=0,
                                     max_size=settings.db_pool)
    metrics.POOL.watch(pool)
    await probe(pool)
    facts = PostgresFacts(pool)
    standing = Standing(facts, drain_seconds=settings.drain_seconds)
    calls = CallsInFlight(settings.calls_per_token, settings.calls_per_run)
    admission = Admission(signer, standing, calls)
    projected = GroupPosition(settings.kafka_bootstrap, settings.projector_group)
    await projected.start()
    checkpoints = Checkpoints(pool, projected, sink, wait=settings.checkpoint_wait)
    service = TelemetryIngest(admission, sink, SeriesBound(facts, settings.max_series),
                              checkpoints)
    server = create_server(service, max_concurrent_rpcs=settings.max_concurrent_rpcs,
                           max_waiting_calls=settings.max_waiting_calls)
    server.add_secure_port(f"{args.host}:{args.port}", credentials)
    await server.start()
    log.info("ingest listening on %s:%d (TLS), %d calls at once, %d per workload token, "
             "%d per run", args.host, args.port, settings.max_concurrent_rpcs,
             settings.calls_per_token, settings.calls_per_run)
    await listener.serve_until_signalled(server, "ingest")
    await projected.stop()
    await sink.stop()
    await pool.close()


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    logging.basicConfig(level=args.loglevel.upper(),
                        format="%(asctime)s %(levelname)s %(name)s %(message)s")
    try:
        asyncio.run(serve(args, flags.settings(IngestSettings, os.environ, args)))
    except (SettingsError, SinkUnavailable, OSError, ValueError, asyncpg.PostgresError,
            shared_identity.IdentityError) as exc:
        print(f"tuneplane-ingest: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
