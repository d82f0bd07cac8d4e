"""docker compose on compose/compose.yaml, from tests: the CLI scripts/docker-compose builds
(``TUNEPLANE_DOCKER_COMPOSE``), never a compose/.env of this checkout nor the shell's
settings, and for a stack that really runs, a project of its own (containers, network and
volumes named after it) with its published ports chosen free."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
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


#: Left out of the checkout's copy a stack is built from: environments, service data and
#: sockets, build directories, caches, and the checkout's own compose/.env.
NOT_COPIED = shutil.ignore_patterns(".git", ".venv", ".services", ".slurm", ".kube-local",
                                    ".artifacts",
                                    "node_modules", "target", "__pycache__", ".*_cache", "*.so",
                                    "*.socket", ".env")


class Stack:
    """One compose project of the gateway profile, in a copy of the checkout (its own
    compose/.env), with its host ports chosen free. ``shell`` runs commands as a user types
    them there, ``docker compose`` being the compose CLI."""

    def __init__(self, work: Path, collector_digest: str) -> None:
        self.root = work / "checkout"
        shutil.copytree(ROOT, self.root, ignore=NOT_COPIED, symlinks=True)
        self.compose_file = self.root / "compose" / "compose.yaml"
        self.env_file = self.root / "compose" / ".env"
        # One name: the images it builds (<project>-<service>) are reused by the next run.
        self.project = "tuneplane-test"
        self.telemetry_port, self.control_port, self.web_port = (free_port() for _ in "abc")
        self.env = {"COMPOSE_PROJECT_NAME": self.project, "COLLECTOR_DIGEST": collector_digest,
                    "TUNEPLANE_TELEMETRY_COLLECTOR_ARTIFACT":
                        f"/opt/tuneplane/artifacts/{collector_digest}",
                    "TUNEPLANE_COMPOSE_TELEMETRY_PORT": str(self.telemetry_port),
                    "TUNEPLANE_COMPOSE_CONTROL_PORT": str(self.control_port),
                    "TUNEPLANE_COMPOSE_WEB_PORT": str(self.web_port)}
        self.shim = work / "bin"
        self.shim.mkdir()
        docker = shutil.which("docker") or "docker"
        (self.shim / "docker").write_text(
            '#!/bin/sh\n# `docker compose` is the compose CLI scripts/docker-compose built\n'
            f'if [ "$1" = compose ]; then shift; exec {compose_binary()} "$@"; fi\n'
            f'exec {docker} "$@"\n')
        (self.shim / "docker").chmod(0o755)
        self.timings: list[tuple[str, float]] = []

    def _timed(self, args: list[str], what: str | None, timeout: float,
               env: dict[str, str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        started = time.monotonic()
        done = subprocess.run(args, capture_output=True, text=True, check=False,
                              timeout=timeout, env={**clean_environment(), **env}, cwd=cwd)
        if what is not None:
            self.timings.append((what, time.monotonic() - started))
            print(f"compose: {what}: {time.monotonic() - started:.1f} s", flush=True)
        if done.returncode != 0:
            pytest.fail(f"{' '.join(args)[:300]} exited {done.returncode}:\n"
                        f"{done.stdout[-3000:]}\n{done.stderr[-5000:]}", pytrace=False)
        return done

    def shell(self, script: str, what: str, timeout: float = 1800.0) -> None:
        """Runs ``script`` (bash, stopping at the first failure) in the checkout's copy."""
        self._timed(["bash", "-euo", "pipefail", "-c", script], what, timeout,
                    {**self.env, "PATH": f"{self.shim}:{os.environ['PATH']}"}, self.root)

    def __call__(self, *args: str, timeout: float = 900.0,
                 what: str | None = None) -> subprocess.CompletedProcess[str]:
        """Runs ``docker compose ARGS`` on the stack; fails the test with compose's output
        when it fails. ``what`` names the step in the printed timings."""
        return self._timed([compose_binary(), "-f", str(self.compose_file), "--env-file",
                            str(self.env_file), "--profile", "gateway", *args],
                           what, timeout, self.env)

    def up(self, what: str, *extra: str) -> None:
        self("up", "-d", "--scale", "projector=3", "--wait", "--wait-timeout", "300", *extra,
             what=what)

    def build(self) -> None:
        """Builds the gateway profile's images, as ``up --build`` in this copy would."""
        self.shell("scripts/compose-secrets >/dev/null", "compose secrets")
        self("build", what="build the images")

    def admin(self, *args: str) -> str:
        """``tuneplane-admin ARGS`` in a container of the admin image; its output."""
        return self("run", "--rm", "--no-deps", "-T", "init", *args).stdout

    def container(self, service: str, index: int = 1) -> str:
        return f"{self.project}-{service}-{index}"

    def logs(self) -> str:
        return self("logs", "--no-color", "--tail", "200").stdout


def main(argv: list[str]) -> int:
    """``python -m tests.support.compose build``: scripts/test builds the compose test's
    images before pytest, from the same copy of the checkout, so that test finds them in
    the build cache instead of building them within its timeout."""
    if argv != ["build"]:
        print("usage: python -m tests.support.compose build", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="tuneplane-compose-build-") as work:
        try:
            Stack(Path(work), "0" * 64).build()
        except pytest.fail.Exception as exc:
            print(f"compose: {exc}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
