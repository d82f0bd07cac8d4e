"""The HTTP reporting path: lifecycle events, log lines and reports from SDK users.

Served under ``/report/v1`` (what ``TUNEPLANE_INGEST_URL`` points at), with workload
tokens only, bound to run/attempt/member: a post for another member is refused. Every
post carries an ``id``; a retried post is stored once. This path never carries curves:
setting ``TUNEPLANE_INGEST_URL`` does not turn native telemetry on.
"""

import json
import time
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, HTTPException
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, Field

from tuneplane.common.tokens import TokenError, TokenSigner
from tuneplane.telemetry.v1.identity import MemberKey

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


def router(signer: TokenSigner, pool: Any) -> APIRouter:
    api = APIRouter(prefix="/report/v1", tags=["reporting"])
    bearer = HTTPBearer(auto_error=False)

    def member_of(credentials: Annotated[HTTPAuthorizationCredentials | None,
                                         Depends(bearer)]) -> MemberKey:
        if credentials is None:
            raise HTTPException(401, "a workload token is required",
                                headers={"WWW-Authenticate": "Bearer"})
        try:
            return signer.verify_workload(credentials.credentials, now=time.time()).member
        except TokenError as exc:
            raise HTTPException(401, f"workload token refused: {exc}",
                                headers={"WWW-Authenticate": "Bearer"}) from None

    Member = Annotated[MemberKey, Depends(member_of)]

    def check(member: MemberKey, post: Identity) -> None:
        if MemberKey(post.run_id, post.attempt, post.member) != member:
            raise HTTPException(403, f"this post is for {post.run_id}/{post.attempt}/"
                                     f"{post.member}, not the token's member {member}")

    @api.post("/lifecycle", response_model=Stored)
    async def lifecycle(member: Member, post: Lifecycle) -> Stored:
        check(member, post)
        async with pool().acquire() as conn:
            done = await conn.fetchval(
                "INSERT INTO attempt_events (run_id, attempt, member, id, event, at, detail) "
                "VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb) ON CONFLICT DO NOTHING RETURNING 1",
                post.run_id, post.attempt, post.member, post.id, post.event, post.at,
                json.dumps(post.detail))
        return Stored(stored=done is not None)

    @api.post("/logs", response_model=Stored)
    async def logs(member: Member, post: Logs) -> Stored:
        check(member, post)
        async with pool().acquire() as conn:
            inserted = await conn.fetch(
                "INSERT INTO attempt_logs (run_id, attempt, member, id, line_no, at, level, "
                "message) SELECT $1, $2, $3, $4, n - 1, at, level, message FROM "
                "unnest($5::float8[], $6::text[], $7::text[]) WITH ORDINALITY "
                "AS l(at, level, message, n) ON CONFLICT DO NOTHING RETURNING 1",
                post.run_id, post.attempt, post.member, post.id,
                [line.at for line in post.lines], [line.level for line in post.lines],
                [line.message for line in post.lines])
        return Stored(stored=bool(inserted))

    @api.post("/reports", response_model=Stored)
    async def reports(member: Member, post: Report) -> Stored:
        check(member, post)
        body = json.dumps(post.body)
        if len(body) > 1 << 20:
            raise HTTPException(413, f"report body is {len(body)} bytes; at most 1 MiB")
        async with pool().acquire() as conn:
            done = await conn.fetchval(
                "INSERT INTO attempt_reports (run_id, attempt, member, id, name, body) "
                "VALUES ($1, $2, $3, $4, $5, $6::jsonb) ON CONFLICT DO NOTHING RETURNING 1",
                post.run_id, post.attempt, post.member, post.id, post.name, body)
        return Stored(stored=done is not None)

    return api
