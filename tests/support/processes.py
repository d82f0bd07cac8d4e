"""The project's processes started as users start them, logs kept."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from tests.support import collector_binary
from tests.support.environment import BIN, Endpoints
from tuneplane.telemetry.v1.identity import MemberKey

#: The collector binary's target that runs natively here.
HOST_TARGET = collector_binary.HOST_TARGET


class Process:
    """A service process of the project, started as users start it, with its log kept."""

    def __init__(self, args: list[str], log: Path, ready: str, *, port: int = 0,
                 env: dict[str, str] | None = None) -> None:
        self.args, self.log, self.ready, self.port, self.env = args, log, ready, port, env
        self.proc: subprocess.Popen[bytes] | None = None
        self.start()

    def start(self, timeout: float = 90.0) -> None:
        mark = self.log.stat().st_size if self.log.exists() else 0
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(self.args, stdout=out, stderr=subprocess.STDOUT,
                                         start_new_session=True,
                                         env={**os.environ, **(self.env or {})})
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = self.log.read_bytes()[mark:].decode(errors="replace")
            if self.ready in text:
                return
            if self.proc.poll() is not None:
                raise AssertionError(f"{self.args[0]} exited {self.proc.returncode}:\n{text}")
            time.sleep(0.1)
        raise AssertionError(f"{self.args[0]} not ready in {timeout}s:\n{self.tail()}")

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]

    def kill(self) -> None:
        """SIGKILL: no chance to flush, commit or say goodbye."""
        assert self.proc is not None
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()


def environment(pid: int) -> dict[str, str]:
    """A running process's environment, as /proc shows it."""
    entries = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(e.decode(errors="replace").partition("=")[::2] for e in entries if e)


def start_ingest(endpoints: Endpoints, tls_dir: Path, port: int, log: Path,
                 *extra: str, env: dict[str, str] | None = None) -> Process:
    """Ingest with the development TLS identity; ``extra`` arguments as given (for example
    ``--max-concurrent-rpcs 16``), ``env`` added to the environment."""
    return Process([str(BIN / "tuneplane-ingest"), "--host", "127.0.0.1", "--port", str(port),
                    "--tls-dir", str(tls_dir), "--kafka-timeout", "5", *extra], log,
                   ready="ingest listening", port=port, env=env)


def start_control(tls_dir: Path, port: int, log: Path, env: dict[str, str],
                  *extra: str) -> Process:
    """Node control with the development TLS identity; ``env`` holds the launch settings
    (TUNEPLANE_TELEMETRY_TARGET, _SPOOL_ROOT, _COLLECTOR_ARTIFACT, ...)."""
    return Process([str(BIN / "tuneplane-control"), "serve", "--host", "127.0.0.1", "--port",
                    str(port), "--tls-dir", str(tls_dir), *extra], log,
                   ready="control listening", port=port, env=env)


def start_projector(endpoints: Endpoints, log: Path, env: dict[str, str] | None = None,
                    ) -> Process:
    return Process([str(BIN / "tuneplane-projector")], log, ready="Worker ready", env=env)


def launch_env(ingest_port: int, spool_root: Path, artifact: Path) -> dict[str, str]:
    return {"TUNEPLANE_TELEMETRY_TARGET": f"localhost:{ingest_port}",
            "TUNEPLANE_TELEMETRY_SPOOL_ROOT": str(spool_root),
            "TUNEPLANE_TELEMETRY_COLLECTOR_ARTIFACT": str(artifact),
            "TUNEPLANE_TELEMETRY_DRAIN_SECONDS": "20"}


def collector_args(ingest_port: int, tls_dir: Path, token: Path, member: MemberKey,
                   spool: Path, sources: dict[str, Path], *extra: str,
                   command: list[str] | None = None, host: str = "localhost") -> list[str]:
    """``tuneplane-collector run`` of the static binary for this host (``command``: another
    build of it, or the aarch64 one under qemu), sending to ``host:ingest_port``."""
    command = command or collector_binary.command(HOST_TARGET)
    args = [*command, "run", "--run", member.run_id, "--attempt",
            str(member.attempt), "--member", member.member, "--spool", str(spool),
            "--target", f"{host}:{ingest_port}", "--ca-file", str(tls_dir / "ca.pem"),
            "--token-file", str(token), *extra]
    for source_id, path in sources.items():
        args += ["--source", f"{source_id}={path}"]
    return args


def run_collector(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*args, "--exit-when-idle"], capture_output=True, text=True,
                          timeout=120, check=False)


def refused_then_stopped(args: list[str], log: Path) -> int:
    """A collector's ``args`` run (its output in ``log``) until ingest refuses its token
    (PERMISSION_DENIED), then stopped with SIGTERM after a drain of a second: its exit
    status."""
    with log.open("wb") as out:
        collector = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, env={
            **os.environ, "TUNEPLANE_TELEMETRY_DRAIN_SECONDS": "1"})
    try:
        deadline = time.monotonic() + 60
        while "PERMISSION_DENIED" not in log.read_text(errors="replace"):
            assert collector.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        collector.send_signal(signal.SIGTERM)
        return collector.wait(timeout=60)
    finally:
        if collector.poll() is None:
            collector.kill()
            collector.wait()
