"""Everything the fault suite runs and breaks: collectors (one per member), ingest behind a
faulty link, two projectors in one consumer group, and the real Kafka and PostgreSQL.

A supervisor restarts what died, as a deployment's restart policy would; the faults are
SIGKILLs (no clean shutdown anywhere), lost replies and cut connections.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from tests.faults.proxy import FaultyLink
from tests.faults.workload import Workload
from tests.support.credentials import workload_token
from tests.support.environment import BIN, ROOT, Endpoints
from tests.support.processes import Process, collector_args
from tuneplane.telemetry.v1.identity import MemberKey

log = logging.getLogger("tests.faults")
#: The member whose spool is small, so an ingest outage fills it and its reading pauses.
SMALL_SPOOL_BYTES = 16_000


def services(command: str, component: str) -> None:
    done = subprocess.run([str(ROOT / "scripts" / "services"), command, component],
                          capture_output=True, text=True, check=False, timeout=180)
    assert done.returncode == 0, f"scripts/services {command} {component}: {done.stderr}"


@dataclass
class Fleet:
    endpoints: Endpoints
    workload: Workload
    run_id: str
    tls_dir: Path
    place: Path
    projectors: list[Process]
    link: FaultyLink
    ingest: Process | None = None
    collectors: dict[int, subprocess.Popen[bytes]] = field(default_factory=dict)
    restarts: dict[str, int] = field(default_factory=dict)

    def start_ingest(self, port: int, env: dict[str, str] | None = None) -> None:
        self.ingest = Process([str(BIN / "tuneplane-ingest"), "--host", "127.0.0.1", "--port",
                               str(port), "--tls-dir", str(self.tls_dir), "--kafka-timeout", "5"],
                              self.place / "ingest.log", ready="ingest listening", port=port,
                              env=env)

    def collector_args(self, i: int) -> list[str]:
        member = MemberKey(self.run_id, 1, self.workload.name(i))
        token = workload_token(self.endpoints, member, self.place / f"token-{i}", ttl=7200)
        source_id, path = self.workload.source(i)
        kind = "--tensorboard" if self.workload.tensorboard(i) else "--source"
        args = collector_args(self.link.port, self.tls_dir, token, member,
                              self.place / "spool" / member.member, {}, "--max-batch-points",
                              "2000", kind, f"{source_id}={path}")
        return args

    def start_collector(self, i: int) -> None:
        env = {**os.environ, "TUNEPLANE_TELEMETRY_DRAIN_SECONDS": "120"}
        if i == self.workload.members - 1:
            env["TUNEPLANE_TELEMETRY_SPOOL_BYTES"] = str(SMALL_SPOOL_BYTES)
        with (self.place / f"collector-{i}.log").open("ab") as out:
            self.collectors[i] = subprocess.Popen(self.collector_args(i), stdout=out,
                                                  stderr=subprocess.STDOUT, env=env)

    def kill_collector(self, i: int) -> None:
        self.collectors[i].kill()
        self.collectors[i].wait()
        self.start_collector(i)

    def supervise(self) -> None:
        """Restart what died (a restart policy's job); count it."""
        for i, proc in self.collectors.items():
            if proc.poll() is not None:
                self._count(f"collector {i} exited {proc.returncode}")
                self.start_collector(i)
        for process in [*self.projectors, *([self.ingest] if self.ingest else [])]:
            assert process.proc is not None
            if process.proc.poll() is not None:
                self._count(f"{process.args[0].rsplit('/', 1)[-1]} exited "
                            f"{process.proc.returncode}")
                try:
                    process.start()
                except AssertionError as exc:  # e.g. Kafka still down: try again later
                    log.warning("restart failed: %s", exc)

    def _count(self, what: str) -> None:
        log.warning("supervisor: %s; restarting it", what)
        self.restarts[what] = self.restarts.get(what, 0) + 1

    def finish_collectors(self, timeout: float) -> dict[int, int]:
        """SIGTERM: read to the end, drain, exit. Their exit codes."""
        for proc in self.collectors.values():
            proc.send_signal(signal.SIGTERM)
        return {i: proc.wait(timeout=timeout) for i, proc in self.collectors.items()}

    def stop(self) -> None:
        for proc in self.collectors.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        if self.ingest is not None:
            self.ingest.stop()

