"""The HTTP reporting path: lifecycle events, log lines and reports from SDK users.

Served under ``/report/v1`` (what ``TUNEPLANE_INGEST_URL`` points at), with workload
tokens only, bound to run/attempt/member: a post for another member is refused. Every
post carries an ``id``; a retried post is stored once. This path never carries curves:
setting ``TUNEPLANE_INGEST_URL`` does not turn native telemetry on.
"""

import json
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, HTTPException
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, Field

from tuneplane.common.tokens import TokenError
from tuneplane.telemetry.v1.identity import MemberKey
from tuneplane.web import queries
from tuneplane.web.dependencies import Now, Pool, Signer

Name = Annotated[str, Field(min_length=1, max_length=256, pattern=r"^[^\x00]+$")]
Id = Annotated[str, Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9._:-]+$")]


class Identity(BaseModel):
    run_id: Name
    attempt: Annotated[int, Field(ge=1, le=2**31 - 1)]
    member: Name
    id: Id = Field(description="chosen by the client; a post retried with it is stored once")


class Lifecycle(Identity):
    event: Literal["started", "running", "finished", "failed", "cancelled"]
    at: float = Field(description="seconds since the Unix epoch")
    detail: dict[str, Any] = Field(default_factory=dict)


class LogLine(BaseModel):
    at: float
    level: Literal["debug", "info", "warning", "error", "critical"] = "info"
    message: Annotated[str, Field(max_length=16_384, pattern=r"^[^\x00]*$")]


class Logs(Identity):
    lines: Annotated[list[LogLine], Field(min_length=1, max_length=1000)]


class Report(Identity):
    name: Name
    body: dict[str, Any] = Field(description="any JSON object, at most 1 MiB")


class Stored(BaseModel):
    stored: bool = Field(description="false when this id was stored before (a retry)")


router = APIRouter(prefix="/report/v1", tags=["reporting"])
bearer = HTTPBearer(auto_error=False)


async def member_of(credentials: Annotated[HTTPAuthorizationCredentials | None,
                                           Depends(bearer)],
                    signer: Signer, now: Now) -> MemberKey:
    """The member a valid workload token is bound to (401 otherwise)."""
    if credentials is None:
        raise HTTPException(401, "a workload token is required",
                            headers={"WWW-Authenticate": "Bearer"})
    try:
        return signer.verify_workload(credentials.credentials, now=now.timestamp()).member
    except TokenError as exc:
        raise HTTPException(401, f"workload token refused: {exc}",
                            headers={"WWW-Authenticate": "Bearer"}) from None


Member = Annotated[MemberKey, Depends(member_of)]


def check(member: MemberKey, post: Identity) -> None:
    if MemberKey(post.run_id, post.attempt, post.member) != member:
        raise HTTPException(403, f"this post is for {post.run_id}/{post.attempt}/"
                                 f"{post.member}, not the token's member {member}")


@router.post("/lifecycle", response_model=Stored)
async def lifecycle(member: Member, pool: Pool, post: Lifecycle) -> Stored:
    check(member, post)
    async with pool.acquire() as conn:
        stored = await queries.add_event(conn, member, post.id, post.event, post.at,
                                         post.detail)
    return Stored(stored=stored)


@router.post("/logs", response_model=Stored)
async def logs(member: Member, pool: Pool, post: Logs) -> Stored:
    check(member, post)
    async with pool.acquire() as conn:
        stored = await queries.add_logs(conn, member, post.id,
                                        [(line.at, line.level, line.message)
                                         for line in post.lines])
    return Stored(stored=stored)


@router.post("/reports", response_model=Stored)
async def reports(member: Member, pool: Pool, post: Report) -> Stored:
    check(member, post)
    body = json.dumps(post.body)
    if len(body) > 1 << 20:
        raise HTTPException(413, f"report body is {len(body)} bytes; at most 1 MiB")
    async with pool.acquire() as conn:
        stored = await queries.add_report(conn, member, post.id, post.name, body)
    return Stored(stored=stored)
