"""scripts/services without starting anything: ``status`` and ``env`` on a fresh data folder
pick the ports once, keep them in ``ports.json`` and print the lines they always printed;
the wrapper runs this checkout's modules from any working directory."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.support.environment import ROOT
from tests.support.services import services

PORTS = ("postgres", "kafka", "kafka_controller", "s3", "s3_grpc", "weed_master",
         "weed_master_grpc", "weed_volume", "weed_volume_grpc", "weed_filer",
         "weed_filer_grpc")


def test_status_of_a_fresh_folder_is_three_stopped_lines_on_kept_ports(tmp_path: Path) -> None:
    data = tmp_path / "services"
    done = services(data, "status")
    assert done.returncode == 0, done.stderr
    ports = json.loads((data / "ports.json").read_text())
    assert sorted(ports) == sorted(PORTS)
    assert done.stdout == "".join(f"{name}\tstopped\t127.0.0.1:{ports[name]}\n"
                                  for name in ("postgres", "kafka", "s3"))
    assert services(data, "status").stdout == done.stdout
    assert services(data, "status", "kafka").stdout == (
        f"kafka\tstopped\t127.0.0.1:{ports['kafka']}\n")


def test_env_prints_the_settings_and_keeps_them(tmp_path: Path) -> None:
    data = tmp_path / "services"
    done = services(data, "env")
    assert done.returncode == 0, done.stderr
    ports = json.loads((data / "ports.json").read_text())
    lines = done.stdout.splitlines()
    assert lines[:10] == [
        f"export TUNEPLANE_DATABASE_URL=postgresql://postgres@127.0.0.1:{ports['postgres']}"
        "/tuneplane",
        f"export TUNEPLANE_KAFKA_BOOTSTRAP=127.0.0.1:{ports['kafka']}",
        "export TUNEPLANE_TOPIC_REPLICATION=1",
        f"export TUNEPLANE_S3_ENDPOINT=http://127.0.0.1:{ports['s3']}",
        "export TUNEPLANE_S3_BUCKET=tuneplane",
        "export AWS_ACCESS_KEY_ID=tuneplane-dev",
        "export AWS_SECRET_ACCESS_KEY=tuneplane-dev-secret",
        "export AWS_DEFAULT_REGION=us-east-1",
        "export TUNEPLANE_GATEWAY_HOSTNAME=localhost",
        "export TUNEPLANE_TELEMETRY_TARGET=localhost:8444",
    ]
    assert [line.split("=", 1)[0] for line in lines[10:]] == [
        "export TUNEPLANE_WEB_JWT_SECRET", "export TUNEPLANE_SECRET_ENC_KEY"]
    assert (data / "env").read_text() == done.stdout
    assert (data / "secrets.env").stat().st_mode & 0o777 == 0o600
    assert services(data, "env").stdout == done.stdout  # same secrets, same ports


def test_an_unknown_component_is_refused(tmp_path: Path) -> None:
    done = services(tmp_path, "status", "redis")
    assert done.returncode == 2
    assert "unknown component redis; choose from postgres, kafka, s3" in done.stderr


def test_stopping_what_never_ran_says_stopped(tmp_path: Path) -> None:
    done = services(tmp_path / "services", "down", "kafka", "s3")
    assert done.returncode == 0, done.stderr
    assert done.stderr == "services: s3: stopped\nservices: kafka: stopped\n"


@pytest.mark.parametrize("script", ["services", "oidc", "slurm", "otelcol", "compose-images"])
def test_a_wrapper_runs_its_own_checkout_from_any_folder(tmp_path: Path, script: str) -> None:
    """A ``scripts`` folder in the working directory (another checkout) is not imported."""
    impostor = tmp_path / "scripts"
    impostor.mkdir()
    module = script.replace("-", "_")
    (impostor / f"{module}.py").write_text("raise SystemExit('the wrong checkout')\n")
    done = subprocess.run([str(ROOT / "scripts" / script), "--help"], capture_output=True,
                          text=True, check=False, cwd=tmp_path, timeout=60)
    assert "the wrong checkout" not in done.stderr
    assert done.returncode in (0, 2), done.stderr
