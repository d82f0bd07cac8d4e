"""Projects and users from the command line: create a project with an owner, grant and
revoke roles, list members, create a run in the project, and disable a user (no new token
for it; its old ones are refused by the web)."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import uuid
from pathlib import Path

import asyncpg

from tests.projector.test_stream import wait_ledger
from tests.support import readmodels
from tests.support.environment import BIN, Endpoints
from tests.support.kafka import produce
from tests.support.processes import Process
from tests.support.truth import member_batch
from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1.identity import MemberKey

ARTIFACT = {"version": 1,
            "sources": [{"id": "train", "kind": "jsonl", "path": "m.jsonl", "owner": "rank-0"}]}


def admin(*args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([str(BIN / "tuneplane-admin"), *args], capture_output=True,
                          text=True, check=False, env=os.environ)
    assert (done.returncode == 0) is ok, (args, done.stdout, done.stderr)
    return done


async def test_projects_roles_and_disabled_users_from_the_cli(
        initialised: Endpoints, tmp_path: Path, db: asyncpg.Connection) -> None:
    team, alice, bob = (f"{x}-{uuid.uuid4().hex[:6]}" for x in ("team", "alice", "bob"))
    for user in (alice, bob):
        admin("user-add", "--user", user)
    assert admin("project-create", team, "--owner", alice).stdout.strip() == \
        f"project {team} created, owned by {alice}"
    assert admin("project-grant", team, bob, "viewer").stdout.strip() == \
        f"{bob} is a viewer of project {team}"
    assert admin("project-members", team).stdout.splitlines() == [f"{alice}\towner",
                                                                   f"{bob}\tviewer"]
    assert "no user 'nobody-x'" in admin("project-grant", team, "nobody-x", "editor",
                                         ok=False).stderr
    assert f"project {team!r} exists" in admin("project-create", team, ok=False).stderr
    assert "must be 1-64 of" in admin("project-create", "../x", ok=False).stderr
    admin("project-revoke", team, bob)
    assert admin("project-members", team).stdout.splitlines() == [f"{alice}\towner"]
    artifact = tmp_path / "integration.json"
    artifact.write_text(json.dumps(ARTIFACT))
    run_id = admin("run-create", "--integration", str(artifact), "--project", team
                   ).stdout.strip()
    assert await db.fetchval("SELECT project FROM runs WHERE run_id = $1", run_id) == team
    assert f"in project {team}" in admin("run-show", run_id).stdout
    assert "no project 'absent-p'" in admin("run-create", "--integration", str(artifact),
                                            "--project", "absent-p", ok=False).stderr
    assert "disabled: its tokens are refused" in admin("user-disable", bob).stdout
    assert "was disabled already" in admin("user-disable", bob).stdout
    assert f"user {bob!r} is disabled" in admin("user-token", "--user", bob, ok=False).stderr
    assert "no user 'nobody-y'" in admin("user-disable", "nobody-y", ok=False).stderr


async def test_retention_from_the_cli_deletes_what_is_due_as_of_the_time_given(
        initialised: Endpoints, db: asyncpg.Connection) -> None:
    team = f"keep-{uuid.uuid4().hex[:6]}"
    admin("project-create", team)
    assert admin("project-retention", team, "--keep-runs-days", "7").stdout.strip() == \
        f"project {team} keeps its runs 7 days after they end"
    run_id = f"{team}-run"
    await db.execute("INSERT INTO runs (run_id, artifact, created_by, project) VALUES "
                     "($1, $2::jsonb, 'test', $3)", run_id, json.dumps(ARTIFACT), team)
    now = await db.fetchval("SELECT now()")
    soon = json.loads(admin("retention", "--now", now.isoformat()).stdout)
    assert team not in soon["by_project"]  # created just now: not due
    later = json.loads(admin("retention", "--now", (now + dt.timedelta(days=8)).isoformat(),
                             "--undo-seconds", "0").stdout)
    assert later["by_project"][team] == [run_id]
    assert await db.fetchval("SELECT deleted_by FROM deletions WHERE run_id = $1",
                             run_id) == "retention"
    assert "at least a day" in admin("project-retention", team, "--keep-runs-days", "0",
                                     ok=False).stderr
    # Rich records kept less long than their runs; said alone, the runs' days stay.
    assert admin("project-retention", team, "--keep-rich-days", "2").stdout.strip() == \
        f"project {team} keeps its runs 7 days after they end, their rich records 2 days"
    assert admin("project-retention", team, "--keep-forever").stdout.strip() == \
        f"project {team} keeps its runs until they are deleted, their rich records 2 days"
    assert "--keep-rich-days M" in admin("project-retention", team, ok=False).stderr
    assert "not allowed with" in admin("project-retention", team, "--keep-rich-days", "2",
                                       "--keep-rich-with-runs", ok=False).stderr
    assert admin("project-retention", team, "--keep-rich-with-runs").stdout.strip() == \
        f"project {team} keeps its runs until they are deleted"


async def test_a_runs_whole_data_exports_to_parquet_and_its_objects(
        initialised: Endpoints, projector: Process, db: asyncpg.Connection,
        tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    run_id = f"export-{uuid.uuid4().hex[:8]}"
    batches = [member_batch(MemberKey(run_id, 1, f"rank-{m}"), seq, 100)
               for m in (0, 1) for seq in (1, 2, 3)]
    batches[0].rich.add(source="train", tag="img", step=1, wall_time=1.0, payload=b"PNG x",
                        kind=pb.RichRecord.KIND_IMAGE, plugin_name="images", file="f",
                        offset=0)
    await produce(initialised.kafka_bootstrap, batches)
    await wait_ledger(db, run_id, 6)
    out = tmp_path / "export"
    said = json.loads(admin("run-export", run_id, "--out", str(out)).stdout)
    assert (said["points"], said["rich_records"], said["objects"]) == (600, 1, 1)
    stored = {(p.member, p.tag, p.step, p.value)
              for p in await readmodels.stored_points(db, run_id)}
    exported = set()
    for member in ("rank-0", "rank-1"):
        (group,) = (out / "series" / "attempt-1" / member).glob("*.parquet")
        rows = pq.read_table(group).to_pydict()
        exported |= set(zip([member] * len(rows["tag"]), rows["tag"], rows["step"],
                            rows["value"], strict=True))
    assert exported == stored  # every point, exactly
    (image,) = (out / "objects").iterdir()
    assert image.read_bytes() == b"PNG x"
    assert pq.read_table(out / "rich.parquet").to_pydict()["tag"] == ["img"]
    assert "is not empty" in admin("run-export", run_id, "--out", str(out), ok=False).stderr


def test_exported_file_names_are_never_paths() -> None:
    from tuneplane.admin.run_export import safe
    for hostile in ("../../etc/x", "/etc/cron.d/x", "..", ".", "", "a/b"):
        name = safe(hostile)
        assert "/" not in name, (hostile, name)
        assert name not in ("", ".", ".."), (hostile, name)
    assert safe("rank-0") == "rank-0"
