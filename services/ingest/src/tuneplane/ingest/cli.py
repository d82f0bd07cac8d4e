"""``tuneplane-ingest``: serve TelemetryIngest on the telemetry port (8444) over TLS."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys

from tuneplane.common.gateway import listener, shared_identity
from tuneplane.common.tokens import TokenSigner
from tuneplane.contract.settings import SettingsError
from tuneplane.ingest.server import TelemetryIngest, create_server
from tuneplane.ingest.settings import IngestSettings
from tuneplane.ingest.sink import KafkaBatchSink, SinkUnavailable

log = logging.getLogger("tuneplane.ingest")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="tuneplane-ingest",
        description="Telemetry gRPC front end: accepts batches from collectors and replies "
                    "only once Kafka holds them. Reads TUNEPLANE_KAFKA_BOOTSTRAP, "
                    "TUNEPLANE_WEB_JWT_SECRET and the TLS settings below (docs/settings.md).")
    p.add_argument("--host", default="0.0.0.0", help="address to listen on (default 0.0.0.0)")
    p.add_argument("--port", type=int, default=8444, help="telemetry port (default 8444)")
    listener.add_arguments(p)
    p.add_argument("--max-concurrent-rpcs", type=int, default=256,
                   help="calls in flight before RESOURCE_EXHAUSTED (default 256)")
    p.add_argument("--kafka-timeout", type=float, default=15.0,
                   help="seconds to wait for Kafka before UNAVAILABLE (default 15)")
    p.add_argument("--loglevel", default="INFO")
    return p


async def serve(args: argparse.Namespace, settings: IngestSettings) -> None:
    credentials = await listener.credentials(args, settings.gateway)
    signer = TokenSigner(settings.jwt_secret)
    sink = KafkaBatchSink(settings.kafka_bootstrap, timeout_seconds=args.kafka_timeout)
    await sink.start()
    server = create_server(TelemetryIngest(signer, sink),
                           max_concurrent_rpcs=args.max_concurrent_rpcs)
    server.add_secure_port(f"{args.host}:{args.port}", credentials)
    await server.start()
    log.info("ingest listening on %s:%d (TLS)", args.host, args.port)
    await listener.serve_until_signalled(server, "ingest")
    await sink.stop()


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    logging.basicConfig(level=args.loglevel.upper(),
                        format="%(asctime)s %(levelname)s %(name)s %(message)s")
    try:
        asyncio.run(serve(args, IngestSettings.from_environ(os.environ)))
    except (SettingsError, SinkUnavailable, OSError, ValueError,
            shared_identity.IdentityError) as exc:
        print(f"tuneplane-ingest: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
