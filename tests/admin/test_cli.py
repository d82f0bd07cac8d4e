"""``tuneplane-admin``: each command needs only its part of the settings, named when absent."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tuneplane.admin.cli import main


@pytest.fixture(autouse=True)
def no_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in os.environ:
        if name.startswith("TUNEPLANE_"):
            monkeypatch.delenv(name)


def test_tls_init_needs_no_store_and_names_the_gateway_host(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert main(["tls-init", "--dir", str(tmp_path / "a")]) == 0
    assert "TLS identity for localhost written" in capsys.readouterr().out
    monkeypatch.setenv("TUNEPLANE_GATEWAY_HOSTNAME", "gw.example")
    assert main(["tls-init", "--dir", str(tmp_path / "b")]) == 0
    assert "TLS identity for gw.example written" in capsys.readouterr().out


@pytest.mark.parametrize(("command", "missing"), [
    (["migrate"], "TUNEPLANE_DATABASE_URL"),
    (["topics"], "TUNEPLANE_KAFKA_BOOTSTRAP"),
    (["bucket"], "TUNEPLANE_S3_BUCKET"),
    (["token", "--run", "r", "--attempt", "1", "--member", "m"], "TUNEPLANE_WEB_JWT_SECRET"),
    (["run-show", "r"], "TUNEPLANE_DATABASE_URL"),
])
def test_a_command_names_the_setting_it_lacks(command: list[str], missing: str,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    assert main(command) == 2
    assert f"tuneplane-admin {command[0]}: {missing} is not set" in capsys.readouterr().err


def test_a_malformed_topic_setting_stops_it_by_name(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TUNEPLANE_TOPIC_PARTITIONS", "twelve")
    assert main(["topics"]) == 2
    assert "TUNEPLANE_TOPIC_PARTITIONS must be a whole number, got 'twelve'" in \
        capsys.readouterr().err


def test_a_sign_in_link_needs_a_web_address(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sign-in-link", "--user", "admin", "--url", "127.0.0.1:8080"]) == 2
    assert "--url is the web service's address (http[s]://host:port)" in \
        capsys.readouterr().err


def test_gateway_ca_hands_out_the_external_trust_bundle_where_one_is_set(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """With an externally managed certificate, what collectors are handed is its CA chain,
    read from the file (no database is asked: the URL given here answers nothing)."""
    monkeypatch.setenv("TUNEPLANE_DATABASE_URL", "postgresql://nobody@127.0.0.1:1/none")
    bundle = tmp_path / "ca.crt"
    bundle.write_text("-----BEGIN CERTIFICATE-----\nexternal\n-----END CERTIFICATE-----\n")
    monkeypatch.setenv("TUNEPLANE_TELEMETRY_TRUST_BUNDLE", str(bundle))
    assert main(["gateway-ca", "--out", str(tmp_path / "out.pem")]) == 0
    assert (tmp_path / "out.pem").read_text() == bundle.read_text()
    bundle.unlink()
    assert main(["gateway-ca"]) == 1
    assert f"TUNEPLANE_TELEMETRY_TRUST_BUNDLE {bundle}: cannot be read" in \
        capsys.readouterr().err
