"""The composed collector's process: started on a configuration, restarted only when it
changes (a renamed sink) or the process died, stopped with its file removed when there is
nothing to compose."""

from __future__ import annotations

import time
from pathlib import Path

from tuneplane.exporter.collector import ComposedCollector


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
    collector = ComposedCollector(config, fake_collector(tmp_path), tmp_path / "otelcol.log")
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
    collector = ComposedCollector(config, None, tmp_path / "otelcol.log")
    collector.apply("{}\n")
    assert config.read_text() == "{}\n"
    assert collector.starts == 0
    collector.apply(None)
    assert not config.exists()
