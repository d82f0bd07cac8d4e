"""Apply the SQL migrations (yoyo-migrations), safe to run from several replicas at once.

Replicas serialise on a PostgreSQL advisory lock held by a separate session. The
server releases it when that session ends, so a replica killed mid-migration never
leaves a lock behind; yoyo's own lock row, stale after such a kill, is cleared
while the advisory lock is held.
"""

from __future__ import annotations

from importlib import resources

import psycopg
from yoyo import get_backend, read_migrations

#: Arbitrary constant naming "tuneplane schema migrations" among advisory locks.
ADVISORY_LOCK_ID = 0x7475_6E65_706C_616E


def yoyo_url(database_url: str) -> str:
    """yoyo's URL for the database; its bookkeeping tables live in ``public``, whatever the
    database's search_path (which puts the read models first)."""
    scheme, sep, rest = database_url.partition("://")
    if not sep or scheme not in ("postgresql", "postgres"):
        raise ValueError(f"TUNEPLANE_DATABASE_URL must be a postgresql:// URL, got {scheme!r}")
    return f"postgresql+psycopg://{rest}{'&' if '?' in rest else '?'}schema=public"


def apply_migrations(database_url: str) -> list[str]:
    """Apply pending migrations; returns the ids applied (empty when up to date)."""
    with psycopg.connect(database_url, autocommit=True) as guard:
        guard.execute("SELECT pg_advisory_lock(%s)", (ADVISORY_LOCK_ID,))
        backend = get_backend(yoyo_url(database_url))
        try:
            backend.break_lock()
            schema = resources.files("tuneplane.controlplane") / "migrations"
            migrations = read_migrations(str(schema))
            with backend.lock():
                pending = backend.to_apply(migrations)
                backend.apply_migrations(pending)
            return [m.id for m in pending]
        finally:
            backend.connection.close()
            guard.execute("SELECT pg_advisory_unlock(%s)", (ADVISORY_LOCK_ID,))
