"""compose/compose.yaml agrees with the code: the settings each service's deployable requires
(from its settings class), ports, profiles; no password or key has a default
(scripts/compose-secrets makes them) and the stores are not published."""

from __future__ import annotations

import importlib.util
import json
import re
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.compose import COMPOSE, docker_compose
from tests.support.deployables import IMAGES, defaults, required
from tests.support.environment import ROOT

FALLBACK = re.compile(r"^\$\{(TUNEPLANE_[A-Z_]+):-(.*)\}$")
INTERPOLATION = re.compile(r"\$\{(\w+)(:?[-?+])?([^}]*)\}")
#: Names of passwords and keys (not of paths to them, like TUNEPLANE_TELEMETRY_SECRETS_DIR).
SECRET = re.compile(r"PASSWORD$|_SECRET$|_KEY_ID$|(SECRET|ACCESS|ENC)_KEY$|TOKEN$")
GENERATE = "run scripts/compose-secrets"
STORES = ("postgres", "kafka", "s3")


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
        {"init", "ingest", "control", "projector", "web", "exporter", "retention", "purge",
         "archive"}
    assert services["ingest"]["ports"] == ["${TUNEPLANE_COMPOSE_TELEMETRY_PORT:-8444}:8444"]
    assert services["control"]["ports"] == ["${TUNEPLANE_COMPOSE_CONTROL_PORT:-8443}:8443"]
    assert services["web"]["ports"] == ["${TUNEPLANE_COMPOSE_WEB_PORT:-8080}:8080"]
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
            assert "healthcheck" in service, name
        for dependency, condition in service.get("depends_on", {}).items():
            assert condition["condition"] in ("service_healthy",
                                              "service_completed_successfully"), (name,
                                                                                  dependency)
    for name in ("postgres", "kafka", "s3"):  # durable data lives in named volumes
        (volume,) = services[name]["volumes"]
        assert volume.split(":")[0] in compose()["volumes"]


#: Each long-running Tuneplane service's metrics port setting.
METRICS_PORTS = {"ingest": "TUNEPLANE_INGEST_METRICS_PORT",
                 "control": "TUNEPLANE_CONTROL_METRICS_PORT",
                 "projector": "TUNEPLANE_PROJECTOR_METRICS_PORT",
                 "web": "TUNEPLANE_WEB_METRICS_PORT",
                 "exporter": "TUNEPLANE_EXPORTER_METRICS_PORT"}


def test_every_service_serves_metrics_where_the_example_prometheus_scrapes() -> None:
    """Each service's metrics port is set, never published, and is the one
    deploy/prometheus/prometheus.yaml scrapes on the compose network, in the job the alert
    rules expect (``tuneplane-<service>``)."""
    services = compose()["services"]
    ports = {name: int(services[name]["environment"][variable])
             for name, variable in METRICS_PORTS.items()}
    scraped: dict[str, int] = {}
    config = yaml.safe_load((ROOT / "deploy" / "prometheus" / "prometheus.yaml").read_text())
    for job in config["scrape_configs"]:
        found = {host: int(port) for static in job.get("static_configs", [])
                 for host, port in (t.split(":") for t in static["targets"])}
        found |= {host: int(dns["port"]) for dns in job.get("dns_sd_configs", [])
                  for host in dns["names"]}
        assert [f"tuneplane-{host}" for host in found] == [job["job_name"]]
        scraped |= found
    assert scraped == ports
    for name, port in ports.items():
        assert not any(str(port) in str(p) for p in services[name].get("ports", [])), name


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
        assert not any(line.startswith(("COPY contract", "COPY services", "RUN uv"))
                       for line in lines)  # sources and uv stay in the build stages
    assert found["runtime"][0] == "python:3.11-slim"


#: The passwords and keys compose requires without a default (scripts/compose-secrets).
SECRETS_ENV = {"TUNEPLANE_POSTGRES_PASSWORD": "postgres-password-given",
               "TUNEPLANE_S3_ACCESS_KEY": "s3-access-key-given",
               "TUNEPLANE_S3_SECRET_KEY": "s3-secret-key-given",
               "TUNEPLANE_WEB_JWT_SECRET": "a-jwt-secret-of-enough-length",
               "TUNEPLANE_SECRET_ENC_KEY": "an-encryption-key-of-enough-length"}
REQUIRED_ENV = {**SECRETS_ENV,
                "TUNEPLANE_TELEMETRY_COLLECTOR_ARTIFACT": "/opt/tuneplane/artifacts/" + "0" * 64}


def test_docker_compose_config_accepts_the_gateway_profile() -> None:
    done = docker_compose("--profile", "gateway", "config", "--format", "json",
                          env=REQUIRED_ENV)
    assert done.returncode == 0, done.stderr
    resolved = json.loads(done.stdout)
    assert set(resolved["services"]) == {"postgres", "kafka", "s3", "init", "ingest",
                                         "control", "projector", "web", "exporter",
                                         "retention", "purge", "archive"}
    # The data lifecycle on a schedule: an hour apart unless TUNEPLANE_LIFECYCLE_EVERY says.
    lifecycle = {name: resolved["services"][name]["command"]
                 for name in ("retention", "purge", "archive")}
    assert lifecycle == {
        "retention": ["retention", "--every", "3600", "--undo-seconds", "86400",
                      "--heartbeat", "/tmp/lifecycle"],
        "purge": ["purge", "--every", "3600", "--heartbeat", "/tmp/lifecycle"],
        "archive": ["archive", "--trim", "--keep-group-if-consumed", "tuneplane-exporter",
                    "--every", "3600", "--heartbeat", "/tmp/lifecycle"]}
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
    if missing in SECRETS_ENV:  # the message says how to make one
        assert GENERATE in done.stderr, done.stderr


def test_without_any_setting_compose_refuses_and_says_how_to_make_the_secrets() -> None:
    # Compose names one missing variable, whichever it meets first (not always the same):
    # with every secret missing and the rest set, it is a secret.
    others = {k: v for k, v in REQUIRED_ENV.items() if k not in SECRETS_ENV}
    for profile in ((), ("--profile", "gateway")):  # the stores alone, too
        done = docker_compose(*profile, "config", env=others)
        assert done.returncode != 0
        assert "required variable" in done.stderr, done.stderr
        assert GENERATE in done.stderr, done.stderr


def test_no_password_or_key_has_a_default() -> None:
    """Each is ``${NAME:?...}`` (required, saying how to make it), never a literal."""
    text = COMPOSE.read_text()
    interpolated = INTERPOLATION.findall(text)
    secrets = {name for name, _, _ in interpolated if SECRET.search(name)}
    assert secrets == set(SECRETS_ENV)
    for name, operator, message in interpolated:
        if name in secrets:
            written = f"${{{name}{operator}{message}}}"
            assert operator == ":?", written
            assert GENERATE in message, written
    for name, service in compose()["services"].items():
        for key, value in (service.get("environment") or {}).items():
            if SECRET.search(key):
                assert INTERPOLATION.fullmatch(str(value)), f"{name}: {key} is a literal"
    url = compose()["x-settings"]["TUNEPLANE_DATABASE_URL"]
    assert "${TUNEPLANE_POSTGRES_PASSWORD:?" in url


def test_rendered_passwords_and_keys_are_the_ones_given() -> None:
    done = docker_compose("--profile", "gateway", "config", "--format", "json",
                          env=REQUIRED_ENV)
    assert done.returncode == 0, done.stderr
    given = set(SECRETS_ENV.values())
    password = SECRETS_ENV["TUNEPLANE_POSTGRES_PASSWORD"]
    for name, service in json.loads(done.stdout)["services"].items():
        environment = service.get("environment") or {}
        for key, value in environment.items():
            if SECRET.search(key):
                assert value in given, f"{name}: {key} is not a value given"
        if "TUNEPLANE_DATABASE_URL" in environment:
            assert environment["TUNEPLANE_DATABASE_URL"] == \
                f"postgresql://tuneplane:{password}@postgres:5432/tuneplane"
    stores = json.loads(done.stdout)["services"]
    assert stores["postgres"]["environment"]["POSTGRES_PASSWORD"] == password
    assert stores["s3"]["environment"]["AWS_SECRET_ACCESS_KEY"] == \
        SECRETS_ENV["TUNEPLANE_S3_SECRET_KEY"]


def test_only_the_gateway_listeners_and_web_are_published() -> None:
    """PostgreSQL, Kafka and the S3 API are reached on the compose network only."""
    done = docker_compose("--profile", "gateway", "config", "--format", "json",
                          env=REQUIRED_ENV)
    assert done.returncode == 0, done.stderr
    services = json.loads(done.stdout)["services"]
    for name in STORES:
        assert not services[name].get("ports"), f"{name} is published"
        assert "network_mode" not in services[name]
    published = {(name, p["target"], p["published"]) for name, s in services.items()
                 for p in s.get("ports", [])}
    assert published == {("ingest", 8444, "8444"), ("control", 8443, "8443"),
                         ("web", 8080, "8080")}


def test_web_serves_https_only_when_given_a_certificate_directory(tmp_path: Path) -> None:
    plain = docker_compose("--profile", "gateway", "config", "--format", "json",
                           env=REQUIRED_ENV)
    assert plain.returncode == 0, plain.stderr
    web = json.loads(plain.stdout)["services"]["web"]["environment"]
    assert not web["TUNEPLANE_WEB_TLS_CERT"]
    assert not web["TUNEPLANE_WEB_TLS_KEY"]
    tls = docker_compose("--profile", "gateway", "config", "--format", "json",
                         env={**REQUIRED_ENV, "TUNEPLANE_WEB_TLS_DIR": str(tmp_path)})
    assert tls.returncode == 0, tls.stderr
    service = json.loads(tls.stdout)["services"]["web"]
    assert service["environment"]["TUNEPLANE_WEB_TLS_CERT"] == "/etc/tuneplane/web-tls/tls.crt"
    assert service["environment"]["TUNEPLANE_WEB_TLS_KEY"] == "/etc/tuneplane/web-tls/tls.key"
    assert {(v["source"], v["target"], v.get("read_only")) for v in service["volumes"]} == \
        {(str(tmp_path), "/etc/tuneplane/web-tls", True)}


def compose_secrets(env_file: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(ROOT / "scripts" / "compose-secrets"), "--env-file",
                           str(env_file)], capture_output=True, text=True, check=True,
                          timeout=60)


def env_values(env_file: Path) -> dict[str, str]:
    lines = env_file.read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if "=" in line)


def test_compose_secrets_makes_each_value_once_readable_by_its_owner_only(
        tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    compose_secrets(env_file)
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
    made = env_values(env_file)
    assert set(made) == set(SECRETS_ENV)
    assert len(set(made.values())) == len(made)
    assert all(re.fullmatch(r"[0-9a-f]{20,}", value) for value in made.values())
    # Run again, after a hand edit and a blanked value: kept, kept, made anew.
    env_file.write_text(env_file.read_text().replace(
        f"TUNEPLANE_S3_SECRET_KEY={made['TUNEPLANE_S3_SECRET_KEY']}",
        "TUNEPLANE_S3_SECRET_KEY=") + "# mine\nTUNEPLANE_WEB_TLS_DIR=/etc/certs\n")
    env_file.chmod(0o644)
    compose_secrets(env_file)
    again = env_values(env_file)
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
    assert again["TUNEPLANE_WEB_TLS_DIR"] == "/etc/certs"
    assert "# mine" in env_file.read_text()
    assert again["TUNEPLANE_S3_SECRET_KEY"] not in ("", made["TUNEPLANE_S3_SECRET_KEY"])
    assert {k: v for k, v in again.items() if k != "TUNEPLANE_S3_SECRET_KEY"} == \
        {k: v for k, v in made.items() if k != "TUNEPLANE_S3_SECRET_KEY"} | \
        {"TUNEPLANE_WEB_TLS_DIR": "/etc/certs"}


def test_compose_renders_from_the_file_compose_secrets_wrote(tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    compose_secrets(env_file)
    artifact = {"TUNEPLANE_TELEMETRY_COLLECTOR_ARTIFACT":
                REQUIRED_ENV["TUNEPLANE_TELEMETRY_COLLECTOR_ARTIFACT"]}
    done = docker_compose("--profile", "gateway", "config", "--format", "json",
                          env=artifact, env_file=env_file)
    assert done.returncode == 0, done.stderr
    made = env_values(env_file)
    services = json.loads(done.stdout)["services"]
    assert services["postgres"]["environment"]["POSTGRES_PASSWORD"] == \
        made["TUNEPLANE_POSTGRES_PASSWORD"]
    assert services["ingest"]["environment"]["TUNEPLANE_SECRET_ENC_KEY"] == \
        made["TUNEPLANE_SECRET_ENC_KEY"]


def script_module(name: str) -> Any:
    """A module of scripts/ (not a package), loaded by path."""
    spec = importlib.util.spec_from_file_location(f"scripts_{name}",
                                                  ROOT / "scripts" / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look themselves up there
    spec.loader.exec_module(module)
    return module


def test_every_public_image_compose_uses_has_a_stand_in_of_the_same_version() -> None:
    """scripts/compose-images can stand in for each base image compose.yaml and the
    Dockerfile name, at the versions scripts/services runs locally."""
    images = script_module("compose_images")
    services = script_module("services")
    named = {s["image"] for s in compose()["services"].values() if "image" in s}
    dockerfile = (ROOT / "compose" / "Dockerfile").read_text()
    named |= {m[1] for m in re.finditer(r"^FROM (\S+:\S+)", dockerfile, re.MULTILINE)}
    named |= {m[1] for m in re.finditer(r"COPY --from=(\S+:\S+) ", dockerfile)}
    assert named == {s.image for s in images.STANDINS}
    assert (images.KAFKA_VERSION, images.SEAWEEDFS_VERSION) == (
        services.KAFKA_VERSION, services.SEAWEEDFS_VERSION)
