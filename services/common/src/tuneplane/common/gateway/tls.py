"""A private CA and a server certificate for the gRPC listeners (cryptography).

Issue 6 moves this identity into PostgreSQL, shared by every replica; the
generation itself stays here.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True, slots=True)
class TlsIdentity:
    ca_pem: bytes
    certificate_pem: bytes
    private_key_pem: bytes

    FILES = ("ca.pem", "server.pem", "server.key")

    def write(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        for name, data in zip(self.FILES, self.fields(), strict=True):
            path = directory / name
            path.write_bytes(data)
            path.chmod(0o600 if name.endswith(".key") else 0o644)

    def fields(self) -> tuple[bytes, bytes, bytes]:
        return self.ca_pem, self.certificate_pem, self.private_key_pem

    @classmethod
    def read(cls, directory: Path) -> TlsIdentity:
        missing = [n for n in cls.FILES if not (directory / n).exists()]
        if missing:
            raise FileNotFoundError(
                f"TLS directory {directory} lacks {', '.join(missing)}; "
                "create it with `tuneplane-admin tls init --dir DIR`")
        ca, cert, key = ((directory / n).read_bytes() for n in cls.FILES)
        return cls(ca, cert, key)


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Tuneplane"),
                      x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


PEM = serialization.Encoding.PEM


@dataclass(frozen=True, slots=True)
class Authority:
    """The private CA: its certificate is the trust bundle, its key signs server certificates."""

    certificate_pem: bytes
    private_key_pem: bytes


def key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def new_authority(*, now: dt.datetime, days: int = 3650) -> Authority:
    key = ec.generate_private_key(ec.SECP256R1())
    name = _name("Tuneplane telemetry CA")
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name)
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False),
                       critical=True)
        .sign(key, hashes.SHA256())
    )
    return Authority(cert.public_bytes(PEM), key_pem(key))


def issue_server(authority: Authority, hostnames: list[str], *, now: dt.datetime,
                 days: int = 397) -> TlsIdentity:
    """A server certificate whose SANs cover ``hostnames`` (names or IPs), signed by the CA."""
    ca_cert = x509.load_pem_x509_certificate(authority.certificate_pem)
    ca_key = serialization.load_pem_private_key(authority.private_key_pem, None)
    assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
    key = ec.generate_private_key(ec.SECP256R1())
    alt_names: list[x509.GeneralName] = []
    for host in hostnames:
        try:
            alt_names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            alt_names.append(x509.DNSName(host))
    cert = (
        x509.CertificateBuilder().subject_name(_name(hostnames[0]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=days))
        .add_extension(x509.SubjectAlternativeName(alt_names), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return TlsIdentity(authority.certificate_pem, cert.public_bytes(PEM), key_pem(key))


def generate(hostnames: list[str], *, now: dt.datetime, days: int = 397) -> TlsIdentity:
    """A new CA and a server certificate for ``hostnames`` (development and tests)."""
    return issue_server(new_authority(now=now), hostnames, now=now, days=days)
