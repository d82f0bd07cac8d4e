"""``tuneplane-ingest``: serve TelemetryIngest on the telemetry port (8444) over TLS."""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import logging
import os
import signal
import sys
from pathlib import Path

import asyncpg
import grpc

from tuneplane.common import gateway_identity
from tuneplane.common.settings import SettingsError, require
from tuneplane.common.tls import TlsIdentity
from tuneplane.common.tokens import TokenSigner
from tuneplane.ingest.server import TelemetryIngest, create_server
from tuneplane.ingest.sink import KafkaBatchSink, SinkUnavailable

log = logging.getLogger("tuneplane.ingest")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="tuneplane-ingest",
        description="Telemetry gRPC front end: accepts batches from collectors and replies "
                    "only once Kafka holds them. Reads TUNEPLANE_KAFKA_BOOTSTRAP and "
                    "TUNEPLANE_WEB_JWT_SECRET.")
    p.add_argument("--host", default="0.0.0.0", help="address to listen on (default 0.0.0.0)")
    p.add_argument("--port", type=int, default=8444, help="telemetry port (default 8444)")
    p.add_argument("--certificate", type=Path,
                   help="externally managed server certificate (PEM); needs "
                        "TUNEPLANE_TELEMETRY_TRUST_BUNDLE, its public CA chain")
    p.add_argument("--private-key", type=Path, help="its private key (PEM)")
    p.add_argument("--tls-dir", type=Path,
                   help="development: server.pem and server.key from `tuneplane-admin "
                        "tls-init`. Without this or --certificate, the shared gateway identity "
                        "is loaded from PostgreSQL (created on first start), which needs "
                        "TUNEPLANE_DATABASE_URL, TUNEPLANE_SECRET_ENC_KEY and "
                        "TUNEPLANE_GATEWAY_HOSTNAME")
    p.add_argument("--max-concurrent-rpcs", type=int, default=256,
                   help="calls in flight before RESOURCE_EXHAUSTED (default 256)")
    p.add_argument("--kafka-timeout", type=float, default=15.0,
                   help="seconds to wait for Kafka before UNAVAILABLE (default 15)")
    p.add_argument("--loglevel", default="INFO")
    return p


def file_credentials(args: argparse.Namespace) -> grpc.ServerCredentials | None:
    """An externally managed certificate, or a development directory; None: use the shared
    identity in PostgreSQL."""
    if args.certificate or args.private_key:
        if not (args.certificate and args.private_key):
            raise SettingsError("--certificate and --private-key go together")
        bundle = require(os.environ, "TUNEPLANE_TELEMETRY_TRUST_BUNDLE")
        if not Path(bundle).is_file():
            raise SettingsError(f"TUNEPLANE_TELEMETRY_TRUST_BUNDLE {bundle} is not a file")
        cert, key = args.certificate.read_bytes(), args.private_key.read_bytes()
    elif args.tls_dir:
        identity = TlsIdentity.read(args.tls_dir)
        cert, key = identity.certificate_pem, identity.private_key_pem
    else:
        return None
    return grpc.ssl_server_credentials([(key, cert)])


async def shared_credentials() -> grpc.ServerCredentials:
    """The gateway identity every replica shares, from PostgreSQL (created on first start)."""
    conn = await asyncpg.connect(require(os.environ, "TUNEPLANE_DATABASE_URL"))
    try:
        loaded = await gateway_identity.load_or_create(
            conn, [require(os.environ, "TUNEPLANE_GATEWAY_HOSTNAME")],
            require(os.environ, "TUNEPLANE_SECRET_ENC_KEY"), now=dt.datetime.now(dt.UTC))
    finally:
        await conn.close()
    state = "created" if loaded.created else "renewed" if loaded.renewed else "loaded"
    log.info("shared gateway TLS identity %s", state)
    identity = loaded.identity
    return grpc.ssl_server_credentials([(identity.private_key_pem, identity.certificate_pem)])


async def serve(args: argparse.Namespace) -> None:
    credentials = file_credentials(args) or await shared_credentials()
    signer = TokenSigner(require(os.environ, "TUNEPLANE_WEB_JWT_SECRET"))
    sink = KafkaBatchSink(require(os.environ, "TUNEPLANE_KAFKA_BOOTSTRAP"),
                          timeout_seconds=args.kafka_timeout)
    await sink.start()
    server = create_server(TelemetryIngest(signer, sink),
                           max_concurrent_rpcs=args.max_concurrent_rpcs)
    server.add_secure_port(f"{args.host}:{args.port}", credentials)
    await server.start()
    log.info("ingest listening on %s:%d (TLS)", args.host, args.port)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    log.info("ingest stopping: finishing calls in flight")
    await server.stop(grace=10)
    await sink.stop()


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    logging.basicConfig(level=args.loglevel.upper(),
                        format="%(asctime)s %(levelname)s %(name)s %(message)s")
    try:
        asyncio.run(serve(args))
    except (SettingsError, SinkUnavailable, OSError, ValueError,
            gateway_identity.IdentityError) as exc:
        print(f"tuneplane-ingest: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
