"""tuneplane-web serving HTTPS when given a certificate (TUNEPLANE_WEB_TLS_CERT/_KEY):
verified against the CA that signed it, with Strict-Transport-Security on its answers;
the settings refuse half a pair or a path naming no file."""

from __future__ import annotations

import datetime as dt
import ssl
from pathlib import Path

import httpx
import pytest

from tests.support.environment import BIN, Endpoints, free_port
from tests.support.processes import Process
from tuneplane.common.gateway.tls import generate
from tuneplane.contract.settings import SettingsError
from tuneplane.web.auth.headers import HSTS
from tuneplane.web.settings import TLS_CERT, TLS_KEY, WebSettings

BASE = {"TUNEPLANE_DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none",
        "TUNEPLANE_WEB_JWT_SECRET": "a-secret-of-enough-length"}


def identity(directory: Path) -> tuple[Path, Path, Path]:
    """A private CA and a server certificate for 127.0.0.1 it signs, as ``tls-init`` makes
    them: (CA, certificate, key)."""
    generate(["localhost", "127.0.0.1"], now=dt.datetime.now(dt.UTC)).write(directory)
    ca, cert, key = (directory / name for name in ("ca.pem", "server.pem", "server.key"))
    return ca, cert, key


def test_web_serves_https_verified_by_its_ca_with_hsts(initialised: Endpoints,
                                                       tmp_path: Path) -> None:
    ca, cert, key = identity(tmp_path / "tls")
    port = free_port()
    web = Process([str(BIN / "tuneplane-web"), "--host", "127.0.0.1", "--port", str(port)],
                  tmp_path / "web.log", ready="Uvicorn running on", port=port,
                  env={TLS_CERT: str(cert), TLS_KEY: str(key)})
    url = f"https://127.0.0.1:{port}/healthz"
    try:
        with httpx.Client(verify=ssl.create_default_context(cafile=ca), timeout=30) as client:
            answer = client.get(url)
        assert answer.status_code == 200
        assert answer.json() == {"status": "ok"}
        assert answer.headers["strict-transport-security"] == HSTS
        with pytest.raises(httpx.ConnectError):  # the CA, not a lax client, made that pass
            httpx.get(url, timeout=30)
        with pytest.raises(httpx.TransportError):  # no plain HTTP on the same port
            httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=30)
    finally:
        web.stop()


def test_tls_settings_are_both_or_neither(tmp_path: Path) -> None:
    _, cert, key = identity(tmp_path)
    both = WebSettings.from_environ({**BASE, TLS_CERT: str(cert), TLS_KEY: str(key)})
    assert (both.tls_cert, both.tls_key) == (cert, key)
    neither = WebSettings.from_environ(BASE)
    assert (neither.tls_cert, neither.tls_key) == (None, None)
    for half in ({TLS_CERT: str(cert)}, {TLS_KEY: str(key)}):
        with pytest.raises(SettingsError, match="go together") as refused:
            WebSettings.from_environ({**BASE, **half})
        assert refused.value.names == (TLS_CERT, TLS_KEY)


def test_a_tls_path_naming_no_file_is_refused_at_the_start(tmp_path: Path) -> None:
    _, _, key = identity(tmp_path)
    absent = tmp_path / "absent.pem"
    with pytest.raises(SettingsError, match=f"{TLS_CERT} names no file: {absent}"):
        WebSettings.from_environ({**BASE, TLS_CERT: str(absent), TLS_KEY: str(key)})
