"""The shared gateway TLS identity in PostgreSQL: one per install, sealed, renewed in place."""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import asyncpg
import grpc
import pytest
from cryptography import x509

from tests.support.credentials import served_certificate
from tests.support.environment import BIN, Endpoints, free_port
from tests.support.processes import Process, launch_env
from tuneplane.common.gateway.shared_identity import IdentityError, Loaded, load_or_create
from tuneplane.node.v1 import node_pb2 as node_pb
from tuneplane.node.v1 import node_pb2_grpc as node_grpc
from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1 import telemetry_pb2_grpc as pb_grpc

SECRET = "a-secret-encryption-key-for-tests"
NOW = dt.datetime(2026, 11, 29, tzinfo=dt.UTC)


async def load(url: str, hostnames: list[str], secret: str = SECRET,
               now: dt.datetime = NOW) -> Loaded:
    conn = await asyncpg.connect(url)
    try:
        return await load_or_create(conn, hostnames, secret, now=now)
    finally:
        await conn.close()


async def test_replicas_racing_at_first_start_create_one_identity(fresh: str) -> None:
    results = await asyncio.gather(*(load(fresh, ["gw.example"]) for _ in range(6)))
    assert sum(r.created for r in results) == 1
    certs = {r.identity.certificate_pem for r in results}
    assert len(certs) == 1


async def test_a_wrong_key_is_an_error_never_a_new_identity(fresh: str) -> None:
    first = await load(fresh, ["gw.example"])
    with pytest.raises(IdentityError, match="does not open the stored gateway TLS identity"):
        await load(fresh, ["gw.example"], secret="another-key-of-enough-length")
    again = await load(fresh, ["gw.example"])
    assert again.identity == first.identity


async def test_renewal_before_expiry_keeps_the_ca(fresh: str) -> None:
    first = await load(fresh, ["gw.example"])
    later = NOW + dt.timedelta(days=380)  # within 30 days of the 397-day certificate's end
    renewed = await load(fresh, ["gw.example"], now=later)
    assert renewed.renewed
    assert renewed.identity.ca_pem == first.identity.ca_pem
    cert = x509.load_pem_x509_certificate(renewed.identity.certificate_pem)
    ca = x509.load_pem_x509_certificate(first.identity.ca_pem)
    cert.verify_directly_issued_by(ca)
    assert cert.not_valid_after_utc > later + dt.timedelta(days=300)
    moved = await load(fresh, ["gw2.example"], now=later)  # a new gateway hostname
    assert moved.renewed
    cert = x509.load_pem_x509_certificate(moved.identity.certificate_pem)
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert set(sans.get_values_for_type(x509.DNSName)) == {"gw.example", "gw2.example"}


def control_args(port: int) -> list[str]:
    return [str(BIN / "tuneplane-control"), "serve", "--host", "127.0.0.1", "--port", str(port)]


async def test_ingest_and_control_serve_the_shared_identity_and_collectors_trust_its_ca(
        fresh: str, initialised: Endpoints, tmp_path: Path) -> None:
    env = {"TUNEPLANE_DATABASE_URL": fresh, "TUNEPLANE_SECRET_ENC_KEY": SECRET,
           "TUNEPLANE_GATEWAY_HOSTNAME": "localhost",
           **launch_env(8444, tmp_path / "spool", tmp_path / ("0" * 64))}
    ports = [free_port(), free_port(), free_port()]
    commands = [[str(BIN / "tuneplane-ingest"), "--host", "127.0.0.1", "--port", str(port)]
                for port in ports[:2]] + [control_args(ports[2])]
    # All three start at once against the empty database: one identity is created.
    with ThreadPoolExecutor(len(commands)) as pool:
        starting = [pool.submit(Process, args, tmp_path / f"{port}.log",
                                ready="listening", port=port, env=env)
                    for args, port in zip(commands, ports, strict=True)]
        replicas = [future.result() for future in starting]
    control = replicas[2]
    try:
        ca = subprocess.run([str(BIN / "tuneplane-admin"), "gateway-ca"], capture_output=True,
                            env={**os.environ, **env}, check=True).stdout
        served = {await asyncio.to_thread(served_certificate, port, ca) for port in ports}
        assert len(served) == 1  # the identical certificate on every listener
        for port in ports[:2]:  # gRPC over TLS verified with the CA collectors are given
            async with grpc.aio.secure_channel(
                    f"localhost:{port}", grpc.ssl_channel_credentials(ca)) as channel:
                with pytest.raises(grpc.aio.AioRpcError) as caught:
                    await pb_grpc.TelemetryIngestStub(channel).PushBatch(
                        pb.PushBatchRequest(batch=b""), timeout=10)
                assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED  # past TLS
        async with grpc.aio.secure_channel(
                f"localhost:{control.port}", grpc.ssl_channel_credentials(ca)) as channel:
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await node_grpc.NodeControlStub(channel).Heartbeat(node_pb.HeartbeatRequest(),
                                                                   timeout=10)
            assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED  # past TLS
    finally:
        for replica in replicas:
            replica.stop()
    wrong = {**env, "TUNEPLANE_SECRET_ENC_KEY": "another-key-of-enough-length"}
    for args in (control_args(free_port()), [str(BIN / "tuneplane-ingest"), "--port",
                                            str(free_port())]):
        done = subprocess.run(args, capture_output=True, text=True, env={**os.environ, **wrong},
                              check=False, timeout=60)
        assert done.returncode == 2, done.stderr
        assert "does not open the stored gateway TLS identity" in done.stderr


async def test_a_running_listener_serves_the_renewed_certificate_without_a_restart(
        fresh: str, initialised: Endpoints, tmp_path: Path) -> None:
    env = {"TUNEPLANE_DATABASE_URL": fresh, "TUNEPLANE_SECRET_ENC_KEY": SECRET,
           "TUNEPLANE_GATEWAY_HOSTNAME": "localhost"}
    port = free_port()
    ingest = Process([str(BIN / "tuneplane-ingest"), "--host", "127.0.0.1", "--port", str(port),
                      "--identity-check-seconds", "0.5"], tmp_path / "ingest.log",
                     ready="ingest listening", port=port, env=env)
    try:
        first = await load(fresh, ["localhost"], now=dt.datetime.now(dt.UTC))
        ca = first.identity.ca_pem
        assert await asyncio.to_thread(served_certificate, port, ca) == \
            first.identity.certificate_pem
        # Another replica renews the stored identity (here: for an added hostname).
        renewed = await load(fresh, ["localhost", "gw2.example"], now=dt.datetime.now(dt.UTC))
        assert renewed.renewed
        assert renewed.identity.ca_pem == ca
        served = b""
        for _ in range(100):
            served = await asyncio.to_thread(served_certificate, port, ca)
            if served == renewed.identity.certificate_pem:
                break
            await asyncio.sleep(0.1)
        assert served == renewed.identity.certificate_pem, ingest.tail()
        assert ingest.proc is not None
        assert ingest.proc.poll() is None  # the same process, never restarted
    finally:
        ingest.stop()


def test_an_external_certificate_needs_the_trust_bundle(tmp_path: Path) -> None:
    from tuneplane.common.gateway import tls
    tls.generate(["gw.example"], now=NOW).write(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "TUNEPLANE_TELEMETRY_TRUST_BUNDLE"}
    # Refused before anything is reached: settings of no server do (the fast tier's).
    env |= {"TUNEPLANE_KAFKA_BOOTSTRAP": "127.0.0.1:1", "TUNEPLANE_WEB_JWT_SECRET": "s" * 32,
            "TUNEPLANE_DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none"}
    done = subprocess.run([str(BIN / "tuneplane-ingest"), "--certificate",
                           str(tmp_path / "server.pem"), "--private-key",
                           str(tmp_path / "server.key")], capture_output=True, text=True,
                          env=env, check=False, timeout=60)
    assert done.returncode == 2
    assert "TUNEPLANE_TELEMETRY_TRUST_BUNDLE is not set" in done.stderr
