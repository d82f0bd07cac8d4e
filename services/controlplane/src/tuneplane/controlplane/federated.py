"""Users of the team's identity provider: each sign-in makes the user if it is new, and
sets its roles from its groups, through the install's mapping (group → project role, or
group → admin).

The projects the mapping names are the provider's to decide: in each, the user holds the
highest role its groups map to, or none. Roles in other projects are left as granted by
hand. The admin flag follows the groups too. A user made here by hand (a local user, the
bootstrap admin) is never signed into through the provider, whatever its name: the
provider's say over a name ends where this service's own users begin. A disabled user stays
disabled: signing in again does not enable it.
"""

from __future__ import annotations

from dataclasses import dataclass

import asyncpg

from tuneplane.common.db import Connection
from tuneplane.controlplane import projects
from tuneplane.controlplane.errors import SignInRefused
from tuneplane.controlplane.projects import Role

ADMIN = "admin"


@dataclass(frozen=True, slots=True)
class Grant:
    group: str
    project: str | None  # None: the admin flag
    role: Role | None


def parse_mapping(text: str) -> list[Grant]:
    """``group=project:role`` or ``group=admin``, comma-separated."""
    grants = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        group, sep, target = item.partition("=")
        if not sep or not group:
            raise ValueError(f"{item!r} is not group=project:role or group=admin")
        if target == ADMIN:
            grants.append(Grant(group, None, None))
            continue
        project, sep, role = target.partition(":")
        if not sep:
            raise ValueError(f"{item!r}: want group=project:role (viewer, editor, owner)")
        projects.check_name(project)
        grants.append(Grant(group, project, Role.named(role)))
    return grants


async def sign_in(conn: Connection, username: str, groups: set[str],
                  mapping: list[Grant]) -> None:
    """Make or update ``username`` from its groups; raises SignInRefused."""
    admin = any(g.project is None and g.group in groups for g in mapping)
    async with conn.transaction():
        try:
            row = await conn.fetchrow(
                "INSERT INTO users (username, is_admin, origin) VALUES ($1, $2, 'oidc') "
                "ON CONFLICT (username) DO UPDATE SET is_admin = EXCLUDED.is_admin "
                "WHERE users.origin = 'oidc' RETURNING disabled_at", username, admin)
        except asyncpg.CheckViolationError:  # the users table's name check
            raise SignInRefused(f"the provider's user name {username!r} is not one this "
                                "service takes (1-128 of A-Z a-z 0-9 . _ @ -)") from None
        if row is None:  # a local user of that name: never the provider's to sign into
            raise SignInRefused(f"{username!r} is a local user here, not the identity "
                                "provider's; sign in with its password")
        if row["disabled_at"] is not None:
            raise SignInRefused(f"user {username!r} is disabled")
        wanted: dict[str, Role] = {}
        for grant in mapping:
            if grant.project is not None and grant.role is not None and grant.group in groups:
                wanted[grant.project] = max(wanted.get(grant.project, grant.role), grant.role)
        for project in sorted({g.project for g in mapping if g.project is not None}):
            if not await projects.exists(conn, project):
                await projects.create(conn, project)
            if project in wanted:
                await projects.grant(conn, project, username, wanted[project])
            else:
                await projects.revoke(conn, project, username)
