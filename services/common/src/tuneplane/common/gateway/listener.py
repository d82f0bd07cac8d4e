"""TLS for the gateway's gRPC listeners (telemetry 8444, Node control 8443).

Both listeners serve the same identity: by default the shared one kept in PostgreSQL
(created on first start, see :mod:`tuneplane.common.gateway.shared_identity`); with
``--certificate``/``--private-key`` an externally managed certificate, whose public CA
chain ``TUNEPLANE_TELEMETRY_TRUST_BUNDLE`` must then name.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import functools
import logging
import signal
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import asyncpg
import grpc

from tuneplane.common.gateway import shared_identity
from tuneplane.common.gateway.renewal import LiveIdentity
from tuneplane.common.gateway.settings import GatewaySettings
from tuneplane.common.gateway.tls import TlsIdentity
from tuneplane.contract.settings import SettingsError

log = logging.getLogger("tuneplane.listener")


def add_arguments(p: argparse.ArgumentParser) -> None:
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


def bearer_token(context: grpc.aio.ServicerContext[Any, Any]) -> str | None:
    """The token of an ``authorization: Bearer <token>`` header, if the call has one."""
    return bearer_in(context.invocation_metadata() or ())


def bearer_in(metadata: Iterable[tuple[str, str | bytes]]) -> str | None:
    """The token of an ``authorization: Bearer <token>`` header among a call's metadata (what
    a server interceptor is handed, before the call's message is read)."""
    for key, value in metadata:
        if key == "authorization" and isinstance(value, str) and value.startswith("Bearer "):
            return value[len("Bearer "):]
    return None


def external_bundle(settings: GatewaySettings) -> Path:
    bundle = settings.trust_bundle.get()
    if not bundle.is_file():
        raise SettingsError(f"{settings.trust_bundle.name} {bundle} is not a file",
                            (settings.trust_bundle.name,))
    return bundle


def file_credentials(args: argparse.Namespace,
                     settings: GatewaySettings) -> grpc.ServerCredentials | None:
    """An externally managed certificate, or a development directory; None: use the shared
    identity in PostgreSQL."""
    if args.certificate or args.private_key:
        if not (args.certificate and args.private_key):
            raise SettingsError("--certificate and --private-key go together")
        external_bundle(settings)
        cert, key = args.certificate.read_bytes(), args.private_key.read_bytes()
    elif args.tls_dir:
        identity = TlsIdentity.read(args.tls_dir)
        cert, key = identity.certificate_pem, identity.private_key_pem
    else:
        return None
    return grpc.ssl_server_credentials([(key, cert)])


async def load_shared_identity(settings: GatewaySettings) -> TlsIdentity:
    """The gateway identity every replica shares, from PostgreSQL (created on first start)."""
    hostname, key = settings.hostname.get(), settings.secret_enc_key.get()
    conn = await asyncpg.connect(settings.database_url.get())
    try:
        loaded = await shared_identity.load_or_create(conn, [hostname], key,
                                                      now=dt.datetime.now(dt.UTC))
    finally:
        await conn.close()
    state = "created" if loaded.created else "renewed" if loaded.renewed else "loaded"
    log.info("shared gateway TLS identity %s", state)
    return loaded.identity


#: Renewal tasks of the served identities (kept referenced while they run).
_renewals: set[asyncio.Task[None]] = set()


async def credentials(args: argparse.Namespace,
                      settings: GatewaySettings) -> grpc.ServerCredentials:
    """File credentials as given, or the shared identity, re-read every
    ``identity_check_seconds`` and served renewed to new connections without a restart."""
    found = file_credentials(args, settings)
    if found is not None:
        return found
    load = functools.partial(load_shared_identity, settings)
    live = LiveIdentity(await load())
    task = asyncio.create_task(live.keep_renewed(load, settings.identity_check_seconds))
    _renewals.add(task)
    task.add_done_callback(_renewals.discard)
    return live.credentials()


async def telemetry_trust_bundle(args: argparse.Namespace, settings: GatewaySettings) -> str:
    """The CA chain collectors are handed to verify the telemetry listener."""
    if args.certificate or settings.trust_bundle.value is not None:
        return external_bundle(settings).read_text()
    if args.tls_dir:
        return TlsIdentity.read(args.tls_dir).ca_pem.decode()
    return (await load_shared_identity(settings)).ca_pem.decode()


async def serve_until_signalled(server: grpc.aio.Server, name: str) -> None:
    """Serve until SIGTERM or SIGINT, then finish the calls in flight (10 s at most)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    log.info("%s stopping: finishing calls in flight", name)
    await server.stop(grace=10)
