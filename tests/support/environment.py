"""Paths, endpoints and ports of the real services the tests run against."""

from __future__ import annotations

import datetime as dt
import socket
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from tuneplane.common.gateway import tls

ROOT = Path(__file__).resolve().parents[2]


BIN = Path(sys.executable).parent


@dataclass(frozen=True, slots=True)
class Endpoints:
    database_url: str
    kafka_bootstrap: str
    s3_endpoint: str
    s3_bucket: str
    jwt_secret: str

    @classmethod
    def from_environ(cls, env: Mapping[str, str]) -> Endpoints:
        return cls(env["TUNEPLANE_DATABASE_URL"], env["TUNEPLANE_KAFKA_BOOTSTRAP"],
                   env["TUNEPLANE_S3_ENDPOINT"], env["TUNEPLANE_S3_BUCKET"],
                   env["TUNEPLANE_WEB_JWT_SECRET"])


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def run_admin(endpoints: Endpoints, *args: str) -> str:
    done = subprocess.run([str(BIN / "tuneplane-admin"), *args], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, f"tuneplane-admin {' '.join(args)}: {done.stderr}"
    return done.stdout


def bench_workspace(endpoints: Endpoints, prefix: str = "tuneplane-bench-") -> tuple[Path, Path]:
    """For benchmarks: storage initialised, a fresh work directory and a TLS directory in it
    for localhost."""
    run_admin(endpoints, "init")
    work = Path(tempfile.mkdtemp(prefix=prefix))
    tls.generate(["localhost", "127.0.0.1"], now=dt.datetime.now(dt.UTC)).write(work / "tls")
    return work, work / "tls"
