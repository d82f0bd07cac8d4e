"""Nodes and launches over HTTP, for platforms that drive Tuneplane from their own
scheduler: enrollment tokens for new nodes, and launches (the run's next attempt: one
launch per member on an enrolled node, one Slurm batch job whose tasks are the members,
or one Kubernetes Indexed Job whose pods are, each submitted by control's backend of that
scheduler). Nodes and their enrollment are for admins; a run's launches are read by its
project's viewers and made by its editors. Which Unix user a project's Slurm jobs run as,
and which namespace its Kubernetes Jobs run in, is the operator's (control's
``--slurm-run-as``, ``--kubernetes-namespace``), never the request's.

Refusals (``EnrollmentError``, ``LaunchError``, ``RunError``) propagate as typed errors;
``tuneplane.web.exceptions`` answers them by kind.
"""

import datetime as dt
from typing import Annotated, Any

from fastapi import APIRouter, Depends
from pydantic import BaseModel, Field

from tuneplane.controlplane import kube_launches, launches, nodes, slurm_launches, slurm_nodes
from tuneplane.web.auth.access import Caller, Editor, Viewer, admin_only
from tuneplane.web.dependencies import Now, Pool

Word = Annotated[str, Field(min_length=1, max_length=256, pattern=r"^[^\x00]+$")]


class LaunchCreate(BaseModel):
    node: Word = Field(description="an enrolled node's name")
    members: Annotated[list[Word], Field(min_length=1, max_length=1024)]
    command: Annotated[list[Annotated[str, Field(max_length=65_536)]],
                       Field(min_length=1, max_length=4096)]
    environment: dict[str, Annotated[str, Field(max_length=65_536)]] = Field(
        default_factory=dict)


AbsolutePath = Annotated[str, Field(min_length=1, max_length=4096, pattern=r"^/[^\x00\n\r]*$")]


class SlurmLaunchCreate(BaseModel):
    nodes: Annotated[int, Field(ge=1, le=slurm_launches.MAX_TASKS)] = 1
    tasks_per_node: Annotated[int, Field(ge=1, le=1024)] = Field(
        1, description="tasks (ranks) per node; task i is member rank-i")
    command: Annotated[list[Annotated[str, Field(max_length=65_536)]],
                       Field(min_length=1, max_length=4096)]
    environment: dict[str, Annotated[str, Field(max_length=65_536)]] = Field(
        default_factory=dict)
    spool_root: AbsolutePath = Field(description="node-local directory of the collectors' spools; "
                                         "a shared filesystem is refused on the node")
    partition: Annotated[str, Field(max_length=64)] = ""
    time_limit: Annotated[str, Field(max_length=32)] = Field(
        "", description="as sbatch --time takes it; empty: the partition's default")
    workdir: Annotated[str, Field(max_length=4096)] = Field(
        "", description="the tasks' working directory, existing on every node; empty: a "
                        "fresh one per node and start")
    requeue: bool = Field(True, description="a preempted job may start again, as the next "
                                            "attempt")


Quantities = dict[Annotated[str, Field(max_length=253)], Annotated[str, Field(max_length=32)]]


class KubernetesLaunchCreate(BaseModel):
    indexes: Annotated[int, Field(ge=1, le=kube_launches.MAX_INDEXES)] = Field(
        1, description="pods of the Indexed Job; index i is member rank-i")
    image: Annotated[str, Field(min_length=1, max_length=512)] = Field(
        description="the training container's image")
    command: Annotated[list[Annotated[str, Field(max_length=65_536)]],
                       Field(min_length=1, max_length=4096)]
    environment: dict[str, Annotated[str, Field(max_length=65_536)]] = Field(
        default_factory=dict)
    requests: Quantities = Field(default_factory=dict,
                                 description="resource requests (cpu, memory, ...)")
    limits: Quantities = Field(default_factory=dict,
                               description="resource limits (memory, nvidia.com/gpu, ...)")
    requeue: bool = Field(True, description="a pod preempted or evicted ends the attempt "
                          "preempted and the launch is queued again, as the next attempt")


class EnrollmentTokenCreate(BaseModel):
    ttl_seconds: Annotated[int, Field(ge=60, le=7 * 86400)] = 3600


router = APIRouter(prefix="/api/v1", tags=["nodes and launches"])

Admin = Annotated[Caller, Depends(admin_only("nodes and their enrollment"))]


@router.post("/nodes/{name}/enrollment-token", status_code=201)
async def enrollment_token(who: Admin, pool: Pool, now: Now, name: str,
                           body: EnrollmentTokenCreate) -> dict[str, Any]:
    ttl = dt.timedelta(seconds=body.ttl_seconds)
    async with pool.acquire() as conn:
        token = await nodes.new_enrollment_token(conn, name, created_by=who.name, now=now, ttl=ttl)
    return {"node": name, "enrollment_token": token, "expires_at": (now + ttl).isoformat()}


class NodeScope(BaseModel):
    projects: list[Annotated[str, Field(max_length=64)]] | None = Field(
        description="projects whose runs may launch on the node; null: every project")


@router.put("/nodes/{name}/projects")
async def node_scope(_: Admin, pool: Pool, name: str, body: NodeScope) -> dict[str, Any]:
    """Which projects' launches the node takes (a fleet of one team's nodes)."""
    async with pool.acquire() as conn:
        await nodes.scope(conn, name, body.projects)
    return {"name": name, "projects": body.projects}


@router.get("/nodes")
async def node_list(_: Admin, pool: Pool) -> list[dict[str, Any]]:
    async with pool.acquire() as conn:
        return await nodes.listing(conn)


@router.post("/runs/{run_id}/launches", status_code=201)
async def launch(_: Editor, pool: Pool, run_id: str, body: LaunchCreate) -> dict[str, Any]:
    async with pool.acquire() as conn:
        attempt, ids = await launches.create(conn, run_id, body.node, body.members,
                                             body.command, body.environment)
    return {"run_id": run_id, "attempt": attempt, "launches": ids}


@router.post("/runs/{run_id}/slurm-launches", status_code=201)
async def slurm_launch(_: Editor, pool: Pool, run_id: str,
                       body: SlurmLaunchCreate) -> dict[str, Any]:
    """Queue the run's next attempt as a Slurm batch job (pending until it runs)."""
    async with pool.acquire() as conn:
        queued = await slurm_launches.create(
            conn, run_id, nodes=body.nodes, tasks_per_node=body.tasks_per_node,
            command=body.command, environment=body.environment, spool_root=body.spool_root,
            options=slurm_launches.JobOptions(body.partition, body.time_limit, body.workdir,
                                              body.requeue))
    return {"run_id": run_id, "attempt": queued.attempt, "slurm_launch": queued.launch_id,
            "members": queued.members}


@router.post("/runs/{run_id}/kubernetes-launches", status_code=201)
async def kubernetes_launch(_: Editor, pool: Pool, run_id: str,
                            body: KubernetesLaunchCreate) -> dict[str, Any]:
    """Queue the run's next attempt as a Kubernetes Indexed Job in the project's namespace
    (the operator's mapping; pending until its pods run)."""
    async with pool.acquire() as conn:
        queued = await kube_launches.create(
            conn, run_id, indexes=body.indexes,
            pod=kube_launches.PodSpec(body.image, body.requests, body.limits,
                                      body.requeue),
            command=body.command, environment=body.environment)
    return {"run_id": run_id, "attempt": queued.attempt, "kubernetes_launch": queued.launch_id,
            "members": queued.members}


@router.get("/runs/{run_id}/launches")
async def launch_list(_: Viewer, pool: Pool, run_id: str) -> list[dict[str, Any]]:
    """The run's launches on nodes (``backend`` "node"), then its Slurm and Kubernetes jobs
    ("slurm", "kubernetes")."""
    async with pool.acquire() as conn:
        return [*await launches.listing(conn, run_id),
                *await slurm_nodes.listing(conn, run_id)]
