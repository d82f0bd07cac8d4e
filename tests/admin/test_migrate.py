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


def migrate_before(database_url: str, first_left_out: str) -> None:
    """The schema as it was before migration ``first_left_out``: a database to fill."""
    from yoyo import get_backend, read_migrations
    from yoyo.migrations import MigrationList
    backend = get_backend(yoyo_url(database_url))
    every = read_migrations(str(ROOT / "services/controlplane/src/tuneplane/controlplane"
                                       "/migrations"))
    with backend.lock():
        backend.apply_migrations(MigrationList([m for m in backend.to_apply(every)
                                                if m.id < first_left_out]))
    backend.connection.close()


def test_runs_and_users_from_before_projects_land_in_the_default_project(
        scratch_database: str) -> None:
    from tuneplane.admin.migrate import apply_migrations
    migrate_before(scratch_database, "0011")
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


def test_series_from_before_run_paths_are_the_roots_and_keep_their_key(
        scratch_database: str) -> None:
    from tuneplane.admin.migrate import apply_migrations
    migrate_before(scratch_database, "0014")
    curves = """SELECT md5(string_agg(r, '|' ORDER BY r)) FROM (
                    SELECT concat_ws(',', s.run_id, s.attempt, s.member, s.source, s.tag,
                                     c.batch_id, c.chunk_index, c.steps::text,
                                     c."values"::text)
                    FROM readmodel.curve_chunks c JOIN readmodel.series s USING (series_id)
                ) AS t(r)"""
    with psycopg.connect(scratch_database) as conn:  # filled before the change
        conn.execute("INSERT INTO readmodel.series (run_id, attempt, member, source, tag) "
                     "VALUES ('old-run', 1, 'm', 'tb', 'lr_group'), ('old-run', 1, 'm', 'tb', "
                     "'loss')")
        conn.execute("""INSERT INTO readmodel.curve_chunks (series_id, batch_id, chunk_index,
                            n, step_min, step_max, v_min, v_max, v_first, v_last, steps,
                            wall_times, "values")
                        SELECT series_id, 'e-1', series_id, 1, 0, 0, 1, 1, 1, 1, '{0}', '{0}',
                               '{1}' FROM readmodel.series""")
        old_sum = conn.execute(curves).fetchone()
    assert apply_migrations(scratch_database)[0] == "0014.series-run-path"
    with psycopg.connect(scratch_database) as conn:
        assert conn.execute("SELECT tag, run_path FROM readmodel.series ORDER BY tag"
                            ).fetchall() == [("loss", ""), ("lr_group", "")]
        assert conn.execute(curves).fetchone() == old_sum
        # The same tag in another run is another series; the root's key is still unique.
        conn.execute("INSERT INTO readmodel.series (run_id, attempt, member, source, run_path, "
                     "tag) VALUES ('old-run', 1, 'm', 'tb', 'lr_group/a', 'lr_group')")
        with pytest.raises(psycopg.errors.UniqueViolation):
            conn.execute("INSERT INTO readmodel.series (run_id, attempt, member, source, tag) "
                         "VALUES ('old-run', 1, 'm', 'tb', 'lr_group')")


def test_chunks_from_before_wall_summaries_get_them_as_the_projector_writes_them(
        scratch_database: str) -> None:
    from tuneplane.admin.migrate import apply_migrations
    from tuneplane.projector.projection import summarise
    from tuneplane.telemetry.v1 import telemetry_pb2 as pb
    migrate_before(scratch_database, "0016")
    chunks = [summarise(pb.SeriesChunk(source="tb", tag="loss", steps=list(range(n)),
                                       wall_times=[1e9 + 0.25 * s for s in range(n)],
                                       values=[float(s) for s in range(n)]), i)
              for i, n in enumerate([3, 1000])]  # without segments, and with 7
    with psycopg.connect(scratch_database) as conn:
        series_id = conn.execute("INSERT INTO readmodel.series (run_id, attempt, member, "
                                 "source, tag) VALUES ('old', 1, 'm', 'tb', 'loss') "
                                 "RETURNING series_id").fetchone()
        for c in chunks:
            s = c.segments
            conn.execute(
                """INSERT INTO readmodel.curve_chunks (series_id, batch_id, chunk_index, n,
                       step_min, step_max, v_min, v_max, v_first, v_last, steps, wall_times,
                       "values", seg_steps, seg_last_steps, seg_counts, seg_min, seg_max,
                       seg_last)
                   VALUES (%s, 'b', %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s,
                           %s, %s, %s)""",
                [v.tolist() if hasattr(v, "tolist") else v for v in (
                    series_id[0] if series_id else None, c.chunk_index, len(c.steps),
                    c.step_min, c.step_max, c.v_min, c.v_max, c.v_first, c.v_last, c.steps,
                    c.wall_times, c.values,
                    *((s.first_steps, s.last_steps, s.counts, s.mins, s.maxs, s.lasts)
                      if s else (None,) * 6))])
    assert apply_migrations(scratch_database)[0] == "0016.chunk-walls"
    with psycopg.connect(scratch_database) as conn:
        rows = conn.execute("SELECT w_first, w_last, seg_last_walls FROM "
                            "readmodel.curve_chunks ORDER BY chunk_index").fetchall()
    assert rows == [(c.w_first, c.w_last,
                     c.segments.last_walls.tolist() if c.segments else None)
                    for c in chunks]
    assert rows[1][2] is not None
    assert len(rows[1][2]) == 7  # 1,000 points // 128


def test_chunk_point_arrays_are_lz4_compressed_and_a_rebuilds_tables_keep_it(
        scratch_database: str) -> None:
    """pglz had cost PostgreSQL most of a projected point's CPU (bench/README.md)."""
    from tuneplane.admin.migrate import apply_migrations
    apply_migrations(scratch_database)
    query = ("SELECT attname, attcompression FROM pg_attribute WHERE attrelid = %s::regclass "
             "AND attname IN ('steps', 'wall_times', 'values') ORDER BY attname")
    with psycopg.connect(scratch_database) as conn:
        assert conn.execute(query, ("readmodel.curve_chunks",)).fetchall() == [
            ("steps", "l"), ("values", "l"), ("wall_times", "l")]
        # The rebuild's tables are made as rebuild.py makes them.
        conn.execute("CREATE TABLE public.next_chunks (LIKE readmodel.curve_chunks INCLUDING ALL)")
        assert [c for _, c in conn.execute(query, ("public.next_chunks",))] == ["l", "l", "l"]


def test_packed_points_are_never_compressed_again_and_a_rebuilds_tables_keep_it(
        scratch_database: str) -> None:
    """The blob is zstd already: EXTERNAL storage, and one form per chunk, in the rebuild's
    tables as in the live ones."""
    from tuneplane.admin.migrate import apply_migrations
    apply_migrations(scratch_database)
    storage = "SELECT attstorage FROM pg_attribute WHERE attrelid = %s::regclass AND " \
              "attname = 'packed'"
    checks = "SELECT conname FROM pg_constraint WHERE conrelid = %s::regclass AND contype = 'c'"
    with psycopg.connect(scratch_database) as conn:
        conn.execute("CREATE TABLE public.next_chunks (LIKE readmodel.curve_chunks INCLUDING ALL)")
        for table in ("readmodel.curve_chunks", "public.next_chunks"):
            assert conn.execute(storage, (table,)).fetchall() == [("e",)]
            assert conn.execute(checks, (table,)).fetchall() == [("curve_chunks_one_form",)]
