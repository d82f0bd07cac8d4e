"""docker compose on compose/compose.yaml, from tests: the CLI scripts/docker-compose builds
(``TUNEPLANE_DOCKER_COMPOSE``), never a compose/.env of this checkout nor the shell's
settings, and for a stack that really runs, a project of its own (containers, network and
volumes named after it) with its published ports chosen free."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from tests.support.environment import ROOT, free_port

COMPOSE = ROOT / "compose" / "compose.yaml"


def compose_binary() -> str:
    binary = os.environ.get("TUNEPLANE_DOCKER_COMPOSE", "")
    if not binary:
        pytest.fail("TUNEPLANE_DOCKER_COMPOSE is not set: "
                    "`export TUNEPLANE_DOCKER_COMPOSE=$(scripts/docker-compose)`",
                    pytrace=False)
    return binary


def clean_environment() -> dict[str, str]:
    """The shell's environment without its Tuneplane and AWS settings."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("TUNEPLANE_", "AWS_"))}


def docker_compose(*args: str, env: dict[str, str],
                   env_file: Path = Path(os.devnull)) -> subprocess.CompletedProcess[str]:
    """``docker compose -f compose/compose.yaml ARGS`` with only ``env`` and ``env_file``
    set."""
    return subprocess.run([compose_binary(), "-f", str(COMPOSE), "--env-file", str(env_file),
                           *args], capture_output=True, text=True, check=False, timeout=120,
                          env={**clean_environment(), **env})


class Stack:
    """One compose project of the gateway profile, with its own secrets and host ports."""

    def __init__(self, work: Path, artifact: str) -> None:
        # One name: the images it builds (<project>-<service>) are reused by the next run.
        self.project = "tuneplane-test"
        self.env_file = work / "compose.env"
        subprocess.run([str(ROOT / "scripts" / "compose-secrets"), "--env-file",
                        str(self.env_file)], check=True, capture_output=True, text=True)
        self.telemetry_port, self.control_port, self.web_port = (free_port() for _ in "abc")
        self.env = {"TUNEPLANE_TELEMETRY_COLLECTOR_ARTIFACT": artifact,
                    "TUNEPLANE_COMPOSE_TELEMETRY_PORT": str(self.telemetry_port),
                    "TUNEPLANE_COMPOSE_CONTROL_PORT": str(self.control_port),
                    "TUNEPLANE_COMPOSE_WEB_PORT": str(self.web_port)}
        self.timings: list[tuple[str, float]] = []

    def secret(self, name: str) -> str:
        for line in self.env_file.read_text().splitlines():
            key, _, value = line.partition("=")
            if key == name:
                return value
        raise KeyError(f"{name} is not in {self.env_file}")

    def __call__(self, *args: str, timeout: float = 900.0,
                 what: str | None = None) -> subprocess.CompletedProcess[str]:
        """Runs ``docker compose ARGS`` on the stack; fails the test with compose's output
        when it fails. ``what`` names the step in the printed timings."""
        started = time.monotonic()
        done = subprocess.run(
            [compose_binary(), "-p", self.project, "-f", str(COMPOSE), "--env-file",
             str(self.env_file), "--profile", "gateway", *args],
            capture_output=True, text=True, check=False, timeout=timeout,
            env={**clean_environment(), **self.env})
        if what is not None:
            self.timings.append((what, time.monotonic() - started))
            print(f"compose: {what}: {time.monotonic() - started:.1f} s", flush=True)
        if done.returncode != 0:
            pytest.fail(f"docker compose {' '.join(args)} exited {done.returncode}:\n"
                        f"{done.stdout[-3000:]}\n{done.stderr[-5000:]}", pytrace=False)
        return done

    def up(self, what: str, *extra: str) -> None:
        self("up", "-d", "--scale", "projector=3", "--wait", "--wait-timeout", "300", *extra,
             what=what)

    def admin(self, *args: str) -> str:
        """``tuneplane-admin ARGS`` in a container of the admin image; its output."""
        return self("run", "--rm", "--no-deps", "-T", "init", *args).stdout

    def container(self, service: str, index: int = 1) -> str:
        return f"{self.project}-{service}-{index}"

    def logs(self) -> str:
        return self("logs", "--no-color", "--tail", "200").stdout
