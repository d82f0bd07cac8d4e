"""compose/compose.yaml agrees with the code: the settings each service's deployable requires
(from its settings class), ports, profiles."""

from __future__ import annotations

import json
import os
import re
import subprocess
from typing import Any

import pytest
import yaml

from tests.support.deployables import IMAGES, defaults, required
from tests.support.environment import ROOT

COMPOSE = ROOT / "compose" / "compose.yaml"
FALLBACK = re.compile(r"^\$\{(TUNEPLANE_[A-Z_]+):-(.*)\}$")


def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())
    return loaded


def built() -> dict[str, dict[str, Any]]:
    """The services running a Tuneplane image, by name."""
    return {name: s for name, s in compose()["services"].items() if "build" in s}


def test_every_service_sets_or_defaults_what_its_deployable_requires() -> None:
    done = docker_compose("--profile", "gateway", "config", "--format", "json",
                          env=REQUIRED_ENV)
    assert done.returncode == 0, done.stderr
    resolved = json.loads(done.stdout)["services"]
    checked = set()
    for name, service in built().items():
        image = service["build"]["target"]
        environment = resolved[name].get("environment") or {}
        present = {k for k, v in environment.items() if v is not None and v.strip()}
        missing = required(image, service.get("command", [])) - present
        assert not missing, f"compose service {name} ({image}) lacks {sorted(missing)}"
        checked.add(image)
    assert checked == set(IMAGES), "an image's settings are not checked"


def test_a_fallback_for_a_setting_with_a_default_is_that_default() -> None:
    """``${NAME:-value}`` states the default (for operators to see), never another."""
    for name, service in built().items():
        image = service["build"]["target"]
        known = defaults(image)
        for key, value in (service.get("environment") or {}).items():
            match = FALLBACK.match(str(value))
            if match and match[1] == key and key in known:
                assert match[2] == known[key], f"{name}: {key} falls back to {match[2]}, " \
                                               f"its default is {known[key]}"


def test_gateway_profile_and_ports() -> None:
    services = compose()["services"]
    assert {n for n, s in services.items() if "gateway" in s.get("profiles", [])} == \
        {"init", "ingest", "control", "projector", "web", "exporter"}
    assert services["ingest"]["ports"] == ["8444:8444"]
    assert services["control"]["ports"] == ["8443:8443"]
    assert {"postgres", "kafka", "s3"} <= {n for n, s in services.items()
                                           if "profiles" not in s}


def test_the_scaled_out_projector_has_no_fixed_port_or_name() -> None:
    projector = compose()["services"]["projector"]
    assert "ports" not in projector
    assert "container_name" not in projector


def test_dockerfile_has_a_target_per_gateway_image() -> None:
    dockerfile = (ROOT / "compose" / "Dockerfile").read_text()
    targets = set(re.findall(r"^FROM \S+ AS (\S+)$", dockerfile, flags=re.M))
    wanted = {s["build"]["target"] for s in compose()["services"].values() if "build" in s}
    assert wanted <= targets
    for service in compose()["services"].values():
        if "build" in service:
            context = (COMPOSE.parent / service["build"]["context"]).resolve()
            assert context == ROOT
            assert (context / service["build"]["dockerfile"]).exists()


def test_long_running_services_are_health_checked_and_wait_on_conditions() -> None:
    services = compose()["services"]
    for name, service in services.items():
        if name != "init":
            assert "healthcheck" in service or name == "projector" or name == "exporter", name
        for dependency, condition in service.get("depends_on", {}).items():
            assert condition["condition"] in ("service_healthy",
                                              "service_completed_successfully"), (name,
                                                                                  dependency)
    for name in ("postgres", "kafka", "s3"):  # durable data lives in named volumes
        (volume,) = services[name]["volumes"]
        assert volume.split(":")[0] in compose()["volumes"]


def stages() -> dict[str, list[str]]:
    """Each Dockerfile stage's lines, by stage name."""
    found: dict[str, list[str]] = {}
    current: list[str] = []
    for line in (ROOT / "compose" / "Dockerfile").read_text().splitlines():
        match = re.match(r"^FROM (\S+) AS (\S+)$", line)
        if match:
            current = found.setdefault(match.group(2), [match.group(1)])
        elif current:
            current.append(line)
    return found


def test_images_are_small_runtime_stages_running_as_a_non_root_user() -> None:
    found = stages()
    for service in compose()["services"].values():
        if "build" not in service:
            continue
        lines = found[service["build"]["target"]]
        assert lines[0] == "runtime", f"{service['build']['target']} is not built on runtime"
        assert "USER 10001" in lines
        assert not any(line.startswith(("COPY protos", "COPY services", "RUN uv"))
                       for line in lines)  # sources and uv stay in the build stages
    assert found["runtime"][0] == "python:3.11-slim"


def docker_compose(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    binary = os.environ.get("TUNEPLANE_DOCKER_COMPOSE", "")
    if not binary:
        pytest.fail("TUNEPLANE_DOCKER_COMPOSE is not set: "
                    "`export TUNEPLANE_DOCKER_COMPOSE=$(scripts/docker-compose)`",
                    pytrace=False)
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("TUNEPLANE_", "AWS_"))}
    return subprocess.run([binary, "-f", str(COMPOSE), *args], capture_output=True,
                          text=True, check=False, timeout=120, env={**clean, **env})


REQUIRED_ENV = {"TUNEPLANE_WEB_JWT_SECRET": "a-jwt-secret-of-enough-length",
                "TUNEPLANE_SECRET_ENC_KEY": "an-encryption-key-of-enough-length",
                "TUNEPLANE_TELEMETRY_COLLECTOR_ARTIFACT": "/opt/tuneplane/artifacts/" + "0" * 64}


def test_docker_compose_config_accepts_the_gateway_profile() -> None:
    done = docker_compose("--profile", "gateway", "config", "--format", "json",
                          env=REQUIRED_ENV)
    assert done.returncode == 0, done.stderr
    resolved = json.loads(done.stdout)
    assert set(resolved["services"]) == {"postgres", "kafka", "s3", "init", "ingest",
                                         "control", "projector", "web", "exporter"}
    ingest = resolved["services"]["ingest"]
    assert ingest["environment"]["TUNEPLANE_WEB_JWT_SECRET"] == REQUIRED_ENV[
        "TUNEPLANE_WEB_JWT_SECRET"]
    assert [(p["target"], p["published"]) for p in ingest["ports"]] == [(8444, "8444")]


@pytest.mark.parametrize("missing", sorted(REQUIRED_ENV))
def test_docker_compose_refuses_to_start_without_a_required_setting(missing: str) -> None:
    env = {k: v for k, v in REQUIRED_ENV.items() if k != missing}
    done = docker_compose("--profile", "gateway", "config", env=env)
    assert done.returncode != 0
    assert missing in done.stderr
