"""Migrations on the real PostgreSQL, applied concurrently by several replicas."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator

import psycopg
import pytest

from tests.support.environment import ROOT, Endpoints
from tuneplane.admin.migrate import yoyo_url

ALL = sorted(p.name.removesuffix(".sql") for p in (
    ROOT / "services/controlplane/src/tuneplane/controlplane/migrations").glob("*.sql"))


@pytest.fixture
def scratch_database(endpoints: Endpoints) -> Iterator[str]:
    name = f"migrate_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(endpoints.database_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    base = endpoints.database_url.rsplit("/", 1)[0]
    yield f"{base}/{name}"
    with psycopg.connect(endpoints.database_url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE {name} WITH (FORCE)")


def test_four_replicas_migrating_at_once_apply_each_migration_once(scratch_database: str) -> None:
    code = ("import sys; from tuneplane.admin.migrate import apply_migrations; "
            "print(','.join(apply_migrations(sys.argv[1])))")
    replicas = [subprocess.Popen([sys.executable, "-c", code, scratch_database],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                for _ in range(4)]
    outputs = [r.communicate(timeout=120) for r in replicas]
    assert all(r.returncode == 0 for r in replicas), outputs
    applied = [out.strip() for out, _ in outputs]
    assert sorted(applied) == ["", "", "", ",".join(ALL)]
    with psycopg.connect(scratch_database) as conn:
        tables = {r[0] for r in conn.execute(
            "SELECT schemaname || '.' || tablename FROM pg_tables")}
    assert {"readmodel.batch_ledger", "readmodel.series", "readmodel.curve_chunks",
            "readmodel.rich_records", "readmodel.session_starts",
            "public.attempt_mappings", "public._yoyo_migration"} <= tables


def test_a_replica_killed_holding_the_lock_does_not_block_the_next(scratch_database: str) -> None:
    from yoyo import get_backend
    backend = get_backend(yoyo_url(scratch_database))
    backend._insert_lock_row(pid=999_999, timeout=1)  # a stale lock row, as after SIGKILL
    backend.connection.close()
    from tuneplane.admin.migrate import apply_migrations
    assert apply_migrations(scratch_database) == ALL


def test_a_non_postgres_url_is_refused_clearly() -> None:
    with pytest.raises(ValueError, match="must be a postgresql:// URL"):
        yoyo_url("mysql://x/y")


def test_runs_and_users_from_before_projects_land_in_the_default_project(
        scratch_database: str) -> None:
    from yoyo import get_backend, read_migrations
    from yoyo.migrations import MigrationList

    from tuneplane.admin.migrate import apply_migrations
    backend = get_backend(yoyo_url(scratch_database))
    every = read_migrations(str(ROOT / "services/controlplane/src/tuneplane/controlplane"
                                       "/migrations"))
    with backend.lock():
        backend.apply_migrations(MigrationList([m for m in backend.to_apply(every)
                                                if m.id < "0011"]))
    backend.connection.close()
    with psycopg.connect(scratch_database) as conn:  # filled before the change
        conn.execute("INSERT INTO users (username, is_admin) VALUES ('root-a', true), "
                     "('alice', false)")
        conn.execute("INSERT INTO runs (run_id, artifact, created_by) VALUES "
                     "('old-run', '{}', 'alice')")
        conn.execute("INSERT INTO readmodel.batch_ledger (run_id, attempt, member, batch_id, "
                     "kafka_partition, kafka_offset, points, sealed_at) VALUES "
                     "('by-hand', 1, 'm', 'b', 0, 0, 1, 0)")
    assert apply_migrations(scratch_database)[0] == "0011.projects"
    with psycopg.connect(scratch_database) as conn:
        assert conn.execute("SELECT run_id, project FROM runs").fetchall() == [
            ("old-run", "default")]
        assert conn.execute("SELECT project, username, role FROM project_roles").fetchall() \
            == [("default", "root-a", "owner")]  # the admins of the day own it; alice: none
        assert conn.execute("SELECT username, disabled_at FROM users ORDER BY username"
                            ).fetchall() == [("alice", None), ("root-a", None)]
        assert conn.execute("SELECT projects FROM nodes").fetchall() == []
