"""The HTTP reporting path (TUNEPLANE_INGEST_URL): workload tokens, member binding, retries
stored once — and it never turns native telemetry on."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import asyncpg

from tests.support import collector_binary
from tests.support.environment import Endpoints
from tests.support.web import Connect
from tuneplane.common.tokens import TokenSigner
from tuneplane.telemetry.v1.identity import MemberKey


async def test_lifecycle_logs_and_reports_are_stored_once_for_the_tokens_member(
        api: Connect, initialised: Endpoints, user_token: str, db: asyncpg.Connection,
        run_id: str) -> None:
    signer = TokenSigner(initialised.jwt_secret)
    token = signer.issue_workload(MemberKey(run_id, 1, "rank-0"), now=time.time(),
                                  ttl_seconds=60)
    ingest_path = "/report/v1"  # TUNEPLANE_INGEST_URL holds the web service's URL and this
    me = {"run_id": run_id, "attempt": 1, "member": "rank-0"}
    async with api(token, path=ingest_path) as sdk:
        started = {**me, "id": "ev-1", "event": "started", "at": 1.0}
        assert (await sdk.post("/lifecycle", json=started)).json() == {"stored": True}
        assert (await sdk.post("/lifecycle", json=started)).json() == {"stored": False}
        logs = {**me, "id": "log-1", "lines": [{"at": 2.0, "message": "epoch 1"},
                                               {"at": 3.0, "level": "error", "message": "x"}]}
        assert (await sdk.post("/logs", json=logs)).json() == {"stored": True}
        assert (await sdk.post("/logs", json=logs)).json() == {"stored": False}
        report = {**me, "id": "r-1", "name": "eval", "body": {"accuracy": 0.9}}
        assert (await sdk.post("/reports", json=report)).json() == {"stored": True}
        other = await sdk.post("/lifecycle", json={**started, "member": "rank-1"})
        assert other.status_code == 403
        assert "not the token's member" in other.json()["detail"]
        bad = await sdk.post("/lifecycle", json={**started, "event": "exploded"})
        assert bad.status_code == 422
    async with api(path=ingest_path) as anonymous:
        assert (await anonymous.post("/lifecycle", json=started)).status_code == 401
        user = await anonymous.post("/lifecycle", json=started,
                                    headers={"Authorization": f"Bearer {user_token}"})
        assert user.status_code == 401  # a user token is not a workload token
    assert await db.fetchval("SELECT count(*) FROM attempt_events WHERE run_id = $1",
                             run_id) == 1
    assert [tuple(r) for r in await db.fetch(
        "SELECT line_no, level, message FROM attempt_logs WHERE run_id = $1 ORDER BY line_no",
        run_id)] == [(0, "info", "epoch 1"), (1, "error", "x")]
    assert await db.fetchval("SELECT body->>'accuracy' FROM attempt_reports WHERE run_id = $1",
                             run_id) == "0.9"


def test_setting_the_ingest_url_does_not_turn_native_telemetry_on(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TUNEPLANE_TELEMETRY_")}
    env["TUNEPLANE_INGEST_URL"] = "http://127.0.0.1:9/report/v1"
    (tmp_path / "m.jsonl").write_text('{"step": 1, "wall_time": 1, "metrics": {"x": 1}}\n')
    done = subprocess.run(
        [*collector_binary.command(collector_binary.HOST_TARGET), "run", "--run", "r",
         "--attempt", "1", "--member", "m", "--source", f"a={tmp_path / 'm.jsonl'}",
         "--spool", str(tmp_path / "spool"),
         "--token-file", str(tmp_path / "token")], capture_output=True, text=True, env=env,
        check=False, timeout=60)
    assert done.returncode == 2
    assert "give --target or set TUNEPLANE_TELEMETRY_TARGET" in done.stderr
    assert not (tmp_path / "spool").exists()
