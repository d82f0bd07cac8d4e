"""Fixtures for tests against the real services started by ``scripts/services up``."""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import asyncpg
import pytest

from tests.support.credentials import new_user_token
from tests.support.environment import BIN, Endpoints, free_port
from tests.support.oidc import oidc_provider  # noqa: F401  (a fixture, shared)
from tests.support.processes import Process, start_ingest, start_projector
from tests.support.three_brokers import three_brokers  # noqa: F401  (a fixture, shared)
from tuneplane.common.gateway.tls import TlsIdentity
from tuneplane.common.kafka.topics import TopicSettings

pytest_plugins = ["tests.support.timings"]

REQUIRED = ("TUNEPLANE_DATABASE_URL", "TUNEPLANE_KAFKA_BOOTSTRAP", "TUNEPLANE_S3_ENDPOINT",
            "TUNEPLANE_S3_BUCKET", "TUNEPLANE_WEB_JWT_SECRET")


#: Fixtures that reach a server (PostgreSQL, Kafka and S3; Dex; the Slurm cluster; the
#: Docker Engine; the Kubernetes cluster). A test that uses one, itself or through another
#: fixture, is in the ``services`` tier; every other test is in the fast tier
#: (``scripts/test --fast``).
SERVER_FIXTURES = frozenset({"endpoints", "oidc_provider", "slurm_cluster", "docker_engine",
                             "kube_cluster"})


#: Tests that run the collector binary and wait on it: the files it follows, its rounds and
#: drains take wall-clock time, not CPU. Over workers (``-n``) they are spread evenly through
#: the run, so each worker overlaps its share with CPU-bound tests instead of a few workers
#: ending the run on a row of them.
WAITING = Path(__file__).parent / "collector" / "binary"


def interleaved(items: list[pytest.Item]) -> list[pytest.Item]:
    """``items`` with the ``WAITING`` ones spread evenly among the rest, each group in its
    order."""
    waiting = [item for item in items if item.path.is_relative_to(WAITING)]
    rest = [item for item in items if not item.path.is_relative_to(WAITING)]
    ranked = [((i + 0.5) / len(waiting), 0, item) for i, item in enumerate(waiting)]
    ranked += [((i + 0.5) / len(rest), 1, item) for i, item in enumerate(rest)]
    return [item for _, _, item in sorted(ranked, key=lambda rank: rank[:2])]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if SERVER_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.services)
    if os.environ.get("PYTEST_XDIST_WORKER"):
        items[:] = interleaved(items)


def docker_running() -> bool:
    return shutil.which("docker") is not None and subprocess.run(
        ["docker", "info"], capture_output=True, check=False).returncode == 0


@pytest.fixture(scope="session")
def docker_engine() -> None:
    """The Docker Engine scripts/test starts (scripts/docker-engine)."""
    if not docker_running():
        pytest.fail("no Docker Engine answers `docker info`: scripts/docker-engine starts one",
                    pytrace=False)


@pytest.fixture(scope="session")
def kube_cluster() -> None:
    """The local Kubernetes cluster scripts/test starts (scripts/kube up), its node Ready."""
    from tests.support.kube import kubectl

    said = kubectl("get", "nodes", "-o",
                   "jsonpath={.items[*].status.conditions[?(@.type=='Ready')].status}")
    if said.split() != ["True"]:
        pytest.fail(f"the local cluster's node is not Ready ({said!r}): scripts/kube up",
                    pytrace=False)


@pytest.fixture(scope="session")
def slurm_cluster() -> None:
    """The local Slurm cluster scripts/test starts (scripts/slurm up)."""
    if shutil.which("scontrol") is None or subprocess.run(
            ["scontrol", "ping"], capture_output=True, check=False).returncode != 0:
        pytest.fail("no Slurm controller answers `scontrol ping`: scripts/slurm up starts one",
                    pytrace=False)


@pytest.fixture(scope="session")
def endpoints() -> Endpoints:
    missing = [name for name in REQUIRED if not os.environ.get(name)]
    if missing:
        hint = ("a Docker engine is present, but this suite takes its services from the "
                "environment" if docker_running() else "no Docker engine is present")
        pytest.fail(f"{', '.join(missing)} not set ({hint}). Start the real services with "
                    "`eval \"$(scripts/services up)\"` and run the tests again.", pytrace=False)
    return Endpoints.from_environ(os.environ)


@pytest.fixture(scope="session")
def initialised(endpoints: Endpoints) -> Endpoints:
    """Migrations, topics and bucket, applied the way a deployment applies them."""
    from tests.support.environment import run_admin
    run_admin(endpoints, "init")
    assert TopicSettings.from_environ(os.environ).partitions >= 1
    return endpoints


@pytest.fixture
async def db(initialised: Endpoints) -> AsyncIterator[asyncpg.Connection]:
    conn = await asyncpg.connect(initialised.database_url)
    yield conn
    await conn.close()


@pytest.fixture(scope="session")
def tls_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import datetime as dt

    from tuneplane.common.gateway import tls
    directory = tmp_path_factory.mktemp("tls")
    tls.generate(["localhost", "127.0.0.1"], now=dt.datetime.now(dt.UTC)).write(directory)
    TlsIdentity.read(directory)
    return directory


@pytest.fixture(scope="session")
def ingest(initialised: Endpoints, tls_dir: Path,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[Process]:
    process = start_ingest(initialised, tls_dir, free_port(),
                           tmp_path_factory.mktemp("ingest") / "ingest.log")
    yield process
    process.stop()


@pytest.fixture(scope="session")
def projector(initialised: Endpoints, tmp_path_factory: pytest.TempPathFactory,
              ) -> Iterator[Process]:
    process = start_projector(initialised, tmp_path_factory.mktemp("projector") / "proj.log")
    yield process
    process.stop()


@pytest.fixture(scope="session")
def collector_artifact(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The static collector's artifact for this host (x86_64), of the binary
    scripts/collector-binary built from this checkout."""
    from tests.support.collector_binary import artifact
    return artifact("x86_64-unknown-linux-musl", tmp_path_factory.mktemp("artifacts"))


@pytest.fixture
async def fresh(initialised: Endpoints) -> AsyncIterator[str]:
    """A database of its own, migrated: for what is per install (the gateway identity,
    the fleet's destinations)."""
    name = f"gw_{os.urandom(4).hex()}"
    admin = await asyncpg.connect(initialised.database_url)
    await admin.execute(f"CREATE DATABASE {name}")
    url = initialised.database_url.rsplit("/", 1)[0] + f"/{name}"
    done = subprocess.run([str(BIN / "tuneplane-admin"), "migrate"], capture_output=True,
                          text=True, env={**os.environ, "TUNEPLANE_DATABASE_URL": url},
                          check=False)
    assert done.returncode == 0, done.stderr
    yield url
    await admin.execute(f"DROP DATABASE {name} WITH (FORCE)")
    await admin.close()


@pytest.fixture
def run_id() -> str:
    return f"test-{uuid.uuid4().hex[:12]}"


@pytest.fixture(scope="session")
def web(initialised: Endpoints, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Process]:
    """tuneplane-web as deployed (uvicorn), for end-to-end tests."""
    port = free_port()
    process = Process([str(BIN / "tuneplane-web"), "--host", "127.0.0.1", "--port", str(port)],
                      tmp_path_factory.mktemp("web") / "web.log", ready="Uvicorn running on",
                      port=port)
    yield process
    process.stop()


@pytest.fixture
def base_url(web: Process) -> str:
    """The tuneplane-web process's address."""
    return f"http://127.0.0.1:{web.port}"


@pytest.fixture(scope="session")
def user_token(initialised: Endpoints) -> str:
    """A user editing the default project (where runs known only by telemetry are)."""
    return new_user_token(initialised, "tester", roles={"default": "editor"})
