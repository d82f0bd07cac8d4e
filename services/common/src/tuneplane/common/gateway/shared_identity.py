"""The gateway's shared TLS identity, kept in PostgreSQL.

The first replica to start creates it (under an advisory lock, so racing replicas
create one); every replica with the same ``TUNEPLANE_SECRET_ENC_KEY`` serves the same
identity. Private keys are sealed with Fernet under a key derived from that secret. A
wrong secret is an error at startup, never a reason to make a new identity. The server
certificate is re-issued by the same CA before it expires or when the gateway hostname
changes, so collectors, which trust the CA, need no change.
"""

from __future__ import annotations

import base64
import datetime as dt
from dataclasses import dataclass

from cryptography import x509
from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from tuneplane.common.db import Connection
from tuneplane.common.gateway.tls import Authority, TlsIdentity, issue_server, new_authority

NAME = "gateway"
LOCK = 0x7470_746C_7369_64  # "tptlsid"
RENEW_BEFORE = dt.timedelta(days=30)


class IdentityError(RuntimeError):
    """The stored identity cannot be used; the message says why (never silently replaced)."""


def sealer(secret: str) -> Fernet:
    if len(secret) < 16:
        raise IdentityError("TUNEPLANE_SECRET_ENC_KEY must be at least 16 characters")
    key = HKDF(algorithm=hashes.SHA256(), length=32, salt=b"tuneplane-secrets-v1",
               info=b"gateway-tls-identity").derive(secret.encode())
    return Fernet(base64.urlsafe_b64encode(key))


@dataclass(frozen=True, slots=True)
class Loaded:
    identity: TlsIdentity
    created: bool
    renewed: bool


def covers(cert_pem: str, hostnames: list[str]) -> bool:
    cert = x509.load_pem_x509_certificate(cert_pem.encode())
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    present = {str(v) for v in names.get_values_for_type(x509.DNSName)} | {
        str(v) for v in names.get_values_for_type(x509.IPAddress)}
    return set(hostnames) <= present


async def load_or_create(conn: Connection, hostnames: list[str], secret: str, *,
                         now: dt.datetime) -> Loaded:
    seal = sealer(secret)
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock($1)", LOCK)
        row = await conn.fetchrow("SELECT * FROM gateway_identity WHERE name = $1", NAME)
        if row is None:
            authority = new_authority(now=now)
            identity = issue_server(authority, hostnames, now=now)
            await conn.execute(
                "INSERT INTO gateway_identity (name, ca_pem, ca_key_sealed, cert_pem, key_sealed,"
                " hostnames, not_after) VALUES ($1, $2, $3, $4, $5, $6, $7)", NAME,
                authority.certificate_pem.decode(), seal.encrypt(authority.private_key_pem),
                identity.certificate_pem.decode(), seal.encrypt(identity.private_key_pem),
                hostnames, not_after(identity))
            return Loaded(identity, created=True, renewed=False)
        try:
            ca_key = seal.decrypt(row["ca_key_sealed"])
            key = seal.decrypt(row["key_sealed"])
        except InvalidToken:
            raise IdentityError(
                "TUNEPLANE_SECRET_ENC_KEY does not open the stored gateway TLS identity; every "
                "replica needs the same key. Refusing to start (the identity is never "
                "regenerated: collectors trust its CA)") from None
        wanted = sorted(set(hostnames) | set(row["hostnames"]))
        if row["not_after"] - now > RENEW_BEFORE and covers(row["cert_pem"], hostnames):
            return Loaded(TlsIdentity(row["ca_pem"].encode(), row["cert_pem"].encode(), key),
                          created=False, renewed=False)
        identity = issue_server(Authority(row["ca_pem"].encode(), ca_key), wanted, now=now)
        await conn.execute(
            "UPDATE gateway_identity SET cert_pem = $2, key_sealed = $3, hostnames = $4, "
            "not_after = $5, renewed_at = now() WHERE name = $1", NAME,
            identity.certificate_pem.decode(), seal.encrypt(identity.private_key_pem), wanted,
            not_after(identity))
        return Loaded(identity, created=False, renewed=True)


def not_after(identity: TlsIdentity) -> dt.datetime:
    return x509.load_pem_x509_certificate(identity.certificate_pem).not_valid_after_utc


async def trust_bundle(conn: Connection) -> str | None:
    """The CA collectors must trust (what a launch hands them)."""
    found: str | None = await conn.fetchval("SELECT ca_pem FROM gateway_identity WHERE name = $1",
                                            NAME)
    return found
