"""Projects and who holds which role in them, over HTTP. Anyone signed in lists the
projects it holds a role in; admins create projects; a project's owners (and admins)
manage its members. A project the caller holds no role in answers 404."""

from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException
from pydantic import BaseModel, Field

from tuneplane.controlplane import projects
from tuneplane.controlplane.projects import Role
from tuneplane.web.auth.access import Caller, Who, admin_only, on_project
from tuneplane.web.dependencies import Pool

router = APIRouter(prefix="/api/v1", tags=["projects"])

Admin = Annotated[Caller, Depends(admin_only("creating projects"))]
Owner = Annotated[Caller, Depends(on_project(Role.OWNER))]
RoleName = Annotated[str, Field(pattern="^(viewer|editor|owner)$")]


class ProjectCreate(BaseModel):
    name: Annotated[str, Field(min_length=1, max_length=64)]
    owner: str | None = Field(default=None, description="a user to own it (default: none "
                                                        "but the admins)")


class Grant(BaseModel):
    role: RoleName


@router.get("/projects")
async def listing(who: Who, pool: Pool) -> list[dict[str, Any]]:
    """The projects the caller holds a role in, with that role (admins: every project)."""
    if who.admin:
        async with pool.acquire() as conn:
            names = await projects.names(conn)
        return [{"project": name, "role": Role.OWNER.label} for name in names]
    return [{"project": name, "role": role.label} for name, role in sorted(who.roles.items())]


@router.post("/projects", status_code=201)
async def create(_: Admin, pool: Pool, body: ProjectCreate) -> dict[str, Any]:
    async with pool.acquire() as conn:
        await projects.create(conn, body.name, owner=body.owner)
    return {"project": body.name}


@router.get("/projects/{project}/members")
async def members(_: Owner, pool: Pool, project: str) -> list[dict[str, Any]]:
    async with pool.acquire() as conn:
        found = await projects.members(conn, project)
    return [{"username": m.username, "role": m.role.label} for m in found]


@router.put("/projects/{project}/members/{username}")
async def grant(_: Owner, pool: Pool, project: str, username: str,
                body: Grant) -> dict[str, Any]:
    async with pool.acquire() as conn:
        await projects.grant(conn, project, username, Role.named(body.role))
    return {"project": project, "username": username, "role": body.role}


@router.delete("/projects/{project}/members/{username}")
async def revoke(_: Owner, pool: Pool, project: str, username: str) -> dict[str, Any]:
    async with pool.acquire() as conn:
        if not await projects.revoke(conn, project, username):
            raise HTTPException(404, f"user {username!r} holds no role in {project!r}")
    return {"project": project, "username": username, "role": None}
