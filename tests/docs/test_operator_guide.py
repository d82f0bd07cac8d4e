"""docs/operator-guide.md: every shell block is marked `sh test` (run here, in order,
against the real services), `sh compose` (run by tests/compose/test_gateway_up.py on a
Docker Engine) or `sh cluster` (needs a real cluster or execution host). The `sh test`
blocks must all succeed."""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import collector_binary
from tests.support.credentials import new_user_token
from tests.support.environment import BIN, ROOT, Endpoints, free_port
from tests.support.guide import blocks
from tests.support.processes import Process


def test_every_shell_block_is_run_or_marked_as_needing_a_cluster() -> None:
    shell = [(marker, body) for language, marker, body in blocks() if language == "sh"]
    assert shell, "the guide has no shell blocks: the pattern is stale"
    unmarked = [body.splitlines()[0] for marker, body in shell
                if marker not in ("test", "compose", "cluster")]
    assert not unmarked, f"shell blocks neither run nor marked: {unmarked}"
    assert [m for m, _ in shell].count("test") >= 8
    assert [m for m, _ in shell].count("compose") >= 1


@pytest.fixture
def gateway(initialised: Endpoints, tmp_path: Path) -> Iterator[tuple[Process, Process]]:
    """Ingest serving the shared identity (as deployed), and web."""
    port, web_port = free_port(), free_port()
    ingest = Process([str(BIN / "tuneplane-ingest"), "--host", "127.0.0.1", "--port",
                      str(port)], tmp_path / "ingest.log", ready="ingest listening", port=port)
    web = Process([str(BIN / "tuneplane-web"), "--host", "127.0.0.1", "--port",
                   str(web_port)], tmp_path / "web.log", ready="Uvicorn running on",
                  port=web_port)
    yield ingest, web
    web.stop()
    ingest.stop()


def test_the_guides_commands_run(initialised: Endpoints, projector: Process,
                                 gateway: tuple[Process, Process], tmp_path: Path) -> None:
    helm = os.environ.get("TUNEPLANE_HELM", "")
    if not helm:
        pytest.fail("TUNEPLANE_HELM is not set: `export TUNEPLANE_HELM=$(scripts/helm)`",
                    pytrace=False)
    ingest, web = gateway
    collector = collector_binary.binary(collector_binary.HOST_TARGET).parent
    env = {**os.environ, "PATH": f"{collector}:{BIN}:{os.environ['PATH']}", "HELM": helm,
           "GUIDE": str(tmp_path / "guide"), "GUIDE_ID": uuid.uuid4().hex[:8],
           "SPOOL_ROOT": str(tmp_path / "spool"),
           "TUNEPLANE_TELEMETRY_TARGET": f"localhost:{ingest.port}",
           "TUNEPLANE_URL": f"http://127.0.0.1:{web.port}",
           "TUNEPLANE_TOKEN": new_user_token(initialised, "guide-admin", admin=True)}
    (tmp_path / "guide").mkdir()
    for number, (language, marker, body) in enumerate(blocks()):
        if language != "sh" or marker != "test":
            continue
        done = subprocess.run(["bash", "-euo", "pipefail", "-c", body], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=300, check=False)
        assert done.returncode == 0, (f"block {number} failed ({done.returncode}):\n{body}\n"
                                      f"stdout:\n{done.stdout[-2000:]}\n"
                                      f"stderr:\n{done.stderr[-2000:]}")
