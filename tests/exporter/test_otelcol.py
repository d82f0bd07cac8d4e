"""The composed collector's process: started on a configuration, restarted only when it
changes (a renamed sink) or the process died, stopped with its file removed when there is
nothing to compose; the real collector runs with none of the exporter's secrets in its
environment."""

from __future__ import annotations

import os
import time
from pathlib import Path

from tests.support.environment import free_port
from tests.support.processes import environment
from tuneplane.destinations.compose import dumps, render
from tuneplane.destinations.resource import parse
from tuneplane.exporter.otelcol import PASSED, ComposedCollector


def fake_collector(tmp_path: Path) -> Path:
    """Stands in for the binary: records each start with the configuration it was given."""
    script = tmp_path / "otelcol"
    script.write_text(f"#!/bin/sh\necho \"$1\" >> {tmp_path / 'starts'}\nexec sleep 60\n")
    script.chmod(0o755)
    return script


def starts(tmp_path: Path, expected: int) -> list[str]:
    deadline = time.monotonic() + 10
    lines: list[str] = []
    while time.monotonic() < deadline:
        path = tmp_path / "starts"
        lines = path.read_text().splitlines() if path.exists() else []
        if len(lines) >= expected:
            break
        time.sleep(0.05)
    return lines


def test_the_collector_restarts_only_on_a_change_and_stops_with_nothing(tmp_path: Path) -> None:
    config = tmp_path / "composed" / "otelcol.json"
    collector = ComposedCollector(config, fake_collector(tmp_path), tmp_path / "otelcol.log",
                                  os.environ)
    try:
        collector.apply('{"exporters": {"debug/a": {}}}\n')
        assert config.read_text() == '{"exporters": {"debug/a": {}}}\n'
        assert starts(tmp_path, 1) == [f"--config={config}"]
        collector.apply('{"exporters": {"debug/a": {}}}\n')  # the same: left running
        assert collector.starts == 1
        collector.apply('{"exporters": {"debug/b": {}}}\n')  # a renamed sink: restarted
        assert collector.starts == 2
        assert len(starts(tmp_path, 2)) == 2
        assert '"debug/b"' in config.read_text()
        assert collector._process is not None
        collector._process.kill()
        collector._process.wait()
        collector.apply('{"exporters": {"debug/b": {}}}\n')  # died: started again
        assert collector.starts == 3
        collector.apply(None)
        assert not config.exists()
        assert collector._process is None
    finally:
        collector.stop()


def test_without_a_binary_only_the_configuration_is_written(tmp_path: Path) -> None:
    config = tmp_path / "otelcol.json"
    collector = ComposedCollector(config, None, tmp_path / "otelcol.log", os.environ)
    collector.apply("{}\n")
    assert config.read_text() == "{}\n"
    assert collector.starts == 0
    collector.apply(None)
    assert not config.exists()


#: What the exporter's environment holds in a deployment (compose, Helm): every one a
#: secret or a store's address the collector has no use for.
EXPORTER_ENVIRONMENT = {
    "TUNEPLANE_DATABASE_URL": "postgresql://tuneplane:db-password@postgres:5432/tuneplane",
    "TUNEPLANE_KAFKA_BOOTSTRAP": "kafka:9092",
    "TUNEPLANE_S3_ENDPOINT": "http://s3:8333", "TUNEPLANE_S3_BUCKET": "tuneplane",
    "AWS_ACCESS_KEY_ID": "tuneplane", "AWS_SECRET_ACCESS_KEY": "s3-secret-key",
    "AWS_DEFAULT_REGION": "us-east-1",
    "TUNEPLANE_WEB_JWT_SECRET": "jwt-secret-0123456789",
    "TUNEPLANE_SECRET_ENC_KEY": "enc-key-0123456789",
    "TUNEPLANE_TELEMETRY_SECRETS_ROOT": "/etc/tuneplane/telemetry",
    "TZ": "UTC",
}


def test_the_real_collector_runs_with_none_of_the_exporters_secrets(
        otelcol: Path, tmp_path: Path) -> None:
    destination = parse({"apiVersion": "tuneplane.dev/v1", "kind": "TelemetryDestination",
                         "metadata": {"name": "console"},
                         "spec": {"sinks": [{"name": "console", "exporter": "debug"}]}})
    composed = render([destination], receiver_endpoint=f"127.0.0.1:{free_port()}")
    assert composed is not None
    log = tmp_path / "otelcol.log"
    collector = ComposedCollector(tmp_path / "otelcol.json", otelcol, log,
                                  {**os.environ, **EXPORTER_ENVIRONMENT})
    try:
        collector.apply(dumps(composed))
        deadline = time.monotonic() + 30
        while "Everything is ready" not in (log.read_text() if log.exists() else ""):
            assert time.monotonic() < deadline, log.read_text() if log.exists() else "no log"
            time.sleep(0.1)
        assert collector.pid is not None
        assert Path(f"/proc/{collector.pid}/exe").resolve() == otelcol.resolve()
        seen = environment(collector.pid)
        assert set(seen) <= set(PASSED), seen
        assert seen["TZ"] == "UTC"
        assert not [n for n in seen if n.startswith(("TUNEPLANE_", "AWS_"))]
        raw = Path(f"/proc/{collector.pid}/environ").read_bytes()
        for name, value in EXPORTER_ENVIRONMENT.items():
            if name != "TZ":
                assert value.encode() not in raw, name
    finally:
        collector.stop()
