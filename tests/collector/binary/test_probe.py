"""``tuneplane-collector probe``: each layer between an execution host and ingest checked
as a collector connects (DNS, TCP, TLS chain and name, the token), and each failure named
with its fix; against an ingest the test scripts, so no service is needed."""

from __future__ import annotations

import datetime as dt
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from tests.collector.binary.scripted_ingest import Answer, scripted_ingest
from tests.support.collector_binary import HOST_TARGET, command
from tests.support.environment import free_port
from tuneplane.common.gateway import tls


def probe(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*command(HOST_TARGET), "probe", *args], capture_output=True,
                          text=True, timeout=60, check=False)


def lines(done: subprocess.CompletedProcess[str]) -> list[str]:
    """The probe's verdicts, a layer each: "ok DNS", "FAIL TLS", ..."""
    return [" ".join(line.split(":")[0].split()) for line in done.stdout.splitlines()
            if not line.startswith(" ")]


def test_a_reachable_ingest_passes_every_layer_and_a_token_it_takes(
        tls_dir: Path, tmp_path: Path) -> None:
    (tmp_path / "token").write_text("t\n")
    with scripted_ingest(tls_dir) as ingest:
        ingest.script.append(Answer(grpc.StatusCode.INVALID_ARGUMENT))  # as ingest answers
        done = probe("--target", f"localhost:{ingest.port}", "--ca-file",
                     str(tls_dir / "ca.pem"), "--token-file", str(tmp_path / "token"))
        assert [call.payload for call in ingest.calls] == [b""]  # an empty batch, no write
        assert ingest.calls[0].token == "Bearer t"
    assert done.returncode == 0, done.stdout + done.stderr
    assert lines(done) == ["ok DNS", "ok TCP", "ok TLS", "ok token"]
    assert "names localhost" in done.stdout


def test_a_refused_token_is_named_with_its_fix(tls_dir: Path, tmp_path: Path) -> None:
    (tmp_path / "token").write_text("t\n")
    with scripted_ingest(tls_dir) as ingest:
        ingest.script.append(Answer(grpc.StatusCode.PERMISSION_DENIED))
        done = probe("--target", f"localhost:{ingest.port}", "--ca-file",
                     str(tls_dir / "ca.pem"), "--token-file", str(tmp_path / "token"))
    assert done.returncode == 1
    assert lines(done) == ["ok DNS", "ok TCP", "ok TLS", "FAIL token"]
    assert "attempt has ended or its node was revoked" in done.stdout


@pytest.fixture
def other_ca(tmp_path: Path) -> Path:
    """The CA of another gateway: ingest's certificate does not chain to it."""
    directory = tmp_path / "other"
    tls.generate(["localhost"], now=dt.datetime.now(dt.UTC)).write(directory)
    return directory / "ca.pem"


@pytest.fixture
def expired(tmp_path: Path) -> Path:
    """A TLS identity whose server certificate ended a year ago."""
    directory = tmp_path / "expired"
    tls.generate(["localhost"], now=dt.datetime.now(dt.UTC) - dt.timedelta(days=400),
                 days=30).write(directory)
    return directory


def test_a_certificate_of_another_ca_another_name_or_past_its_time_fails_tls(
        tls_dir: Path, other_ca: Path, expired: Path) -> None:
    with scripted_ingest(tls_dir) as ingest:
        target = f"localhost:{ingest.port}"
        unknown = probe("--target", target, "--ca-file", str(other_ca))
        misnamed = probe("--target", target, "--ca-file", str(tls_dir / "ca.pem"),
                         "--server-name", "ingest.example")
    with scripted_ingest(expired) as ingest:
        old = probe("--target", f"localhost:{ingest.port}", "--ca-file",
                    str(expired / "ca.pem"))
    for done, fix in [(unknown, "not signed by a CA in --ca-file"),
                      (misnamed, "does not carry the name"),
                      (old, "outside its validity")]:
        assert done.returncode == 1, done.stdout
        assert lines(done) == ["ok DNS", "ok TCP", "FAIL TLS"], done.stdout
        assert fix in done.stdout, done.stdout


@pytest.fixture
def plain_port() -> Iterator[int]:
    """A port that accepts connections and speaks no TLS (another service)."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        yield server.getsockname()[1]


def test_no_name_no_listener_or_no_tls_each_fail_at_their_layer(tls_dir: Path,
                                                                plain_port: int) -> None:
    ca = str(tls_dir / "ca.pem")
    unresolved = probe("--target", "ingest.name.invalid:8444", "--ca-file", ca)
    assert (unresolved.returncode, lines(unresolved)) == (1, ["FAIL DNS"])
    refused = probe("--target", f"127.0.0.1:{free_port()}", "--ca-file", ca)
    assert (refused.returncode, lines(refused)) == (1, ["ok DNS", "FAIL TCP"])
    assert "nothing listens on that port" in refused.stdout
    plain = probe("--target", f"127.0.0.1:{plain_port}", "--ca-file", ca,
                  "--server-name", "localhost", "--timeout", "0.5")
    assert (plain.returncode, lines(plain)) == (1, ["ok DNS", "ok TCP", "FAIL TLS"])
    never = probe("--target", f"127.0.0.1:{plain_port}", "--ca-file", ca, "--timeout", "0")
    assert never.returncode == 2
    assert "'0' for '--timeout <SECONDS>'" in never.stderr, never.stderr
    bad = probe("--target", "no-port", "--ca-file", ca)
    assert bad.returncode == 2
    assert "is not HOST:PORT" in bad.stderr
