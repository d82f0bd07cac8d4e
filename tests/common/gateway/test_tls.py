"""The generated CA and server certificate."""

from __future__ import annotations

import datetime as dt
import ipaddress
from pathlib import Path

import pytest
from cryptography import x509

from tuneplane.common.gateway.tls import TlsIdentity, generate

NOW = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def test_server_certificate_covers_the_names_and_is_signed_by_the_ca() -> None:
    identity = generate(["gateway.example", "127.0.0.1"], now=NOW)
    ca = x509.load_pem_x509_certificate(identity.ca_pem)
    cert = x509.load_pem_x509_certificate(identity.certificate_pem)
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == ["gateway.example"]
    assert sans.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("127.0.0.1")]
    cert.verify_directly_issued_by(ca)
    assert cert.not_valid_after_utc > NOW + dt.timedelta(days=300)


def test_written_identity_reads_back_with_a_private_key_file(tmp_path: Path) -> None:
    identity = generate(["localhost"], now=NOW)
    identity.write(tmp_path)
    assert TlsIdentity.read(tmp_path) == identity
    assert (tmp_path / "server.key").stat().st_mode & 0o777 == 0o600


def test_missing_files_are_named(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"lacks ca\.pem, server\.pem, server\.key"):
        TlsIdentity.read(tmp_path)
