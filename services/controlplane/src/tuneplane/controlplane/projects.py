"""Projects and the roles users hold in them.

Every run belongs to a project (``runs.project``); a run with telemetry but no ``runs`` row
(a workload token issued by hand) belongs to ``DEFAULT``. A user holds at most one role per
project, ordered ``viewer`` < ``editor`` < ``owner``: viewers read a project's runs, curves
and rich records; editors also create runs, start and end attempts and launch; owners also
manage who holds which role. Admins hold every role in every project without a row here.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from typing import Final

import asyncpg

from tuneplane.common.db import Connection
from tuneplane.controlplane.errors import (
    InvalidProject,
    ProjectExists,
    ProjectNotFound,
    UserNotFound,
)

DEFAULT: Final = "default"
NAME: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


class Role(enum.IntEnum):
    VIEWER = 1
    EDITOR = 2
    OWNER = 3

    @property
    def label(self) -> str:
        return self.name.lower()

    @classmethod
    def named(cls, name: str) -> Role:
        try:
            return cls[name.upper()]
        except KeyError:
            raise InvalidProject(f"role {name!r} is not one of viewer, editor, owner") from None


@dataclass(frozen=True, slots=True)
class Member:
    username: str
    role: Role


def check_name(project: str) -> None:
    if not NAME.fullmatch(project):
        raise InvalidProject(f"project name {project!r} must be 1-64 of A-Z a-z 0-9 . _ - "
                             "(starting with a letter or digit)")


async def create(conn: Connection, project: str, *, owner: str | None = None) -> None:
    """A new project, with ``owner`` (a user) as its first owner."""
    check_name(project)
    async with conn.transaction():
        try:
            await conn.execute("INSERT INTO projects (project) VALUES ($1)", project)
        except asyncpg.UniqueViolationError:
            raise ProjectExists(f"project {project!r} exists") from None
        if owner is not None:
            await grant(conn, project, owner, Role.OWNER)


async def exists(conn: Connection, project: str) -> bool:
    return bool(await conn.fetchval("SELECT 1 FROM projects WHERE project = $1", project))


async def names(conn: Connection) -> list[str]:
    return [r["project"] for r in await conn.fetch("SELECT project FROM projects "
                                                   "ORDER BY project")]


async def grant(conn: Connection, project: str, username: str, role: Role) -> None:
    """``username`` holds ``role`` in ``project`` (replacing the role it held)."""
    try:
        await conn.execute(
            "INSERT INTO project_roles (project, username, role) VALUES ($1, $2, $3) "
            "ON CONFLICT (project, username) DO UPDATE SET role = EXCLUDED.role",
            project, username, role.label)
    except asyncpg.ForeignKeyViolationError as exc:
        if "username" in str(exc.detail or ""):
            raise UserNotFound(f"no user {username!r}") from None
        raise ProjectNotFound(f"no project {project!r}") from None


async def revoke(conn: Connection, project: str, username: str) -> bool:
    """``username`` holds no role in ``project`` any more; False when it held none."""
    return await conn.fetchval("DELETE FROM project_roles WHERE project = $1 AND "
                               "username = $2 RETURNING true", project, username) is not None


async def members(conn: Connection, project: str) -> list[Member]:
    rows = await conn.fetch("SELECT username, role FROM project_roles WHERE project = $1 "
                            "ORDER BY username", project)
    return [Member(r["username"], Role.named(r["role"])) for r in rows]


#: A user's roles beside a row of ``users u``, as two arrays (``roles_in`` reads them): the
#: token and session checks read a caller's standing and roles in one statement.
WITH_ROLES = """LEFT JOIN LATERAL (
    SELECT array_agg(r.project) AS role_projects, array_agg(r.role) AS role_names
    FROM project_roles r WHERE r.username = u.username
) roles ON true"""


def roles_in(row: asyncpg.Record) -> dict[str, Role]:
    """The roles of a row read with ``WITH_ROLES``, by project."""
    return dict(zip(row["role_projects"] or (),
                    map(Role.named, row["role_names"] or ()), strict=True))


#: A run deleted (its deletion standing): ``$1`` the run.
DELETED_RUN_OF = ("SELECT 1 FROM deletions WHERE run_id = {run} AND attempt = 0 AND "
                  "undone_at IS NULL")
DELETED_RUN = DELETED_RUN_OF.format(run="$1")
#: The project of run ``{run}`` (``of_run``), ``{default}`` the default project.
RUN_PROJECT_OF = ("SELECT coalesce((SELECT project FROM runs WHERE run_id = {run}), "
                  "(SELECT {default}::text FROM batch_ledger WHERE run_id = {run} LIMIT 1)) "
                  f"WHERE NOT EXISTS ({DELETED_RUN_OF})")
RUN_PROJECT = RUN_PROJECT_OF.format(run="$1", default="$2")


def place_of(run: str, default: str, attempt: str) -> str:
    """A statement of one row: run ``run``'s project (``run_project``) and whether its
    attempt ``attempt`` (NULL: none named) is deleted, by itself or with its run
    (``run_gone``); its parameters at the positions given (``"$2"``...), so that a caller's
    standing can be read with it in one statement."""
    project = RUN_PROJECT_OF.format(run=run, default=default)
    return (f"SELECT ({project}) AS run_project, {attempt}::int IS NOT NULL AND EXISTS ("
            f"SELECT 1 FROM deletions WHERE run_id = {run} AND attempt IN (0, {attempt}) "
            "AND undone_at IS NULL) AS run_gone")


@dataclass(frozen=True, slots=True)
class Place:
    """Where a run stands for a request naming it (and maybe one of its attempts)."""

    run_id: str
    attempt: int | None
    project: str | None  # None: no such run, or it was deleted
    gone: bool  # the attempt named is deleted, by itself or with its run

    @staticmethod
    def read(run_id: str, attempt: int | None, row: asyncpg.Record) -> Place:
        """From a row read with ``place_of``."""
        return Place(run_id, attempt, row["run_project"], bool(row["run_gone"]))


#: A run a request names, and the attempt it names too (None: none).
Asked = tuple[str, int | None]


def place_join(asked: Asked | None, first: int) -> tuple[str, str, list[object]]:
    """What adds ``place_of``'s columns for ``asked`` to a statement whose parameters end
    before ``$first``: the columns to select, the join, and the parameters it adds; nothing
    when nothing is asked."""
    if asked is None:
        return "", "", []
    run, default, attempt = (f"${first + i}" for i in range(3))
    return (", place.*",
            f" LEFT JOIN LATERAL ({place_of(run, default, attempt)}) place ON true",
            [asked[0], DEFAULT, asked[1]])


def place_in(asked: Asked | None, row: asyncpg.Record | None) -> Place | None:
    """The place of ``asked`` in a row read with ``place_join`` (None: nothing asked)."""
    return None if asked is None or row is None else Place.read(*asked, row)


async def of_run(conn: Connection, run_id: str) -> str | None:
    """The project ``run_id`` belongs to: its ``runs`` row's, or ``DEFAULT`` for a run
    known only by its telemetry (a token issued by hand); None when nothing of it is known,
    or it was deleted, so a run that does not exist and one of another project look
    alike."""
    found = await conn.fetchval(RUN_PROJECT, run_id, DEFAULT)
    return None if found is None else str(found)


async def of_attempt(conn: Connection, run_id: str, attempt: int | None) -> Place:
    """``of_run``, and whether ``attempt`` (None: no attempt named) is deleted, by itself
    or with its run, in one statement."""
    row = await conn.fetchrow(place_of("$1", "$2", "$3"), run_id, DEFAULT, attempt)
    assert row is not None  # one row, always
    return Place.read(run_id, attempt, row)


async def of_object(conn: Connection, object_key: str) -> set[str]:
    """The projects of every run holding a rich record stored as ``object_key`` (one
    object may serve several runs: keys are the content's digest)."""
    rows = await conn.fetch(
        "SELECT DISTINCT coalesce(r.project, $2) AS project FROM rich_records rr "
        "LEFT JOIN runs r ON r.run_id = rr.run_id WHERE rr.object_key = $1 AND NOT EXISTS "
        "(SELECT 1 FROM deletions d WHERE d.run_id = rr.run_id AND d.attempt IN (0, "
        "rr.attempt) AND d.undone_at IS NULL)", object_key, DEFAULT)
    return {r["project"] for r in rows}
