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


def generate(hostnames: list[str], *, now: dt.datetime, days: int = 397) -> TlsIdentity:
    """A new CA and a server certificate whose SANs cover ``hostnames`` (names or IPs)."""
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name("Tuneplane telemetry CA")
    ca_cert = (
        x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
        .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=days * 3))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False),
                       critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    alt_names: list[x509.GeneralName] = []
    for host in hostnames:
        try:
            alt_names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            alt_names.append(x509.DNSName(host))
    cert = (
        x509.CertificateBuilder().subject_name(_name(hostnames[0])).issuer_name(ca_name)
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=days))
        .add_extension(x509.SubjectAlternativeName(alt_names), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    return TlsIdentity(
        ca_cert.public_bytes(pem),
        cert.public_bytes(pem),
        key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()),
    )
