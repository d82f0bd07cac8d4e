"""The HTTP reporting path: lifecycle events, log lines and reports from SDK users.

Served under ``/report/v1`` (what ``TUNEPLANE_INGEST_URL`` points at), with workload
tokens only, bound to run/attempt/member: a post for another member is refused, and so is
a token that no longer stands (its attempt ended beyond the drain window, or the node it was
issued through was revoked: ``tuneplane.controlplane.standing``, 403). Every post carries an
``id``; a retried post is stored once. This path never carries curves: setting
``TUNEPLANE_INGEST_URL`` does not turn native telemetry on.

Bodies are bounded before they are parsed (``BODY_LIMITS``, enforced by
``tuneplane.web.auth.admission``): a lifecycle event with its detail, a post of log lines and a
report each have their own bound.
"""

import json
from collections.abc import AsyncIterator
from typing import Annotated, Any, Final, Literal

from fastapi import APIRouter, Depends, HTTPException
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, Field, field_validator

from tuneplane.common.tokens import TokenError
from tuneplane.controlplane import standing
from tuneplane.telemetry.v1.identity import MemberKey
from tuneplane.web import posts
from tuneplane.web.dependencies import Now, Pool, Signer, State

#: A lifecycle event's ``detail`` (JSON), a post of log lines and a report's ``body`` (JSON)
#: at most, in bytes.
DETAIL_BYTES: Final = 64 * 1024
LOGS_BYTES: Final = 1 << 20
REPORT_BYTES: Final = 1 << 20
#: Room for a post's other fields around those.
ENVELOPE_BYTES: Final = 16 * 1024
#: Request body bounds of this router's paths, for ``admission.Admission``.
BODY_LIMITS: Final = {"/report/v1/lifecycle": DETAIL_BYTES + ENVELOPE_BYTES,
                      "/report/v1/logs": LOGS_BYTES,
                      "/report/v1/reports": REPORT_BYTES + ENVELOPE_BYTES}


def json_bytes(value: Any) -> int:
    """Its size as UTF-8 JSON: what a client sent for it, give or take whitespace (a lone
    surrogate, which JSON may escape, counts as its three bytes)."""
    return len(json.dumps(value, ensure_ascii=False).encode(errors="surrogatepass"))


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
    detail: dict[str, Any] = Field(default_factory=dict,
                                   description=f"any JSON object, at most {DETAIL_BYTES} bytes")

    @field_validator("detail")
    @classmethod
    def bounded(cls, detail: dict[str, Any]) -> dict[str, Any]:
        size = json_bytes(detail)
        if size > DETAIL_BYTES:
            raise ValueError(f"detail is {size} bytes as JSON; at most {DETAIL_BYTES}")
        return detail


class LogLine(BaseModel):
    at: float
    level: Literal["debug", "info", "warning", "error", "critical"] = "info"
    message: Annotated[str, Field(max_length=16_384, pattern=r"^[^\x00]*$")]


class Logs(Identity):
    lines: Annotated[list[LogLine], Field(
        min_length=1, max_length=1000,
        description=f"at most {LOGS_BYTES} bytes of request body in all")]


class Report(Identity):
    name: Name
    body: dict[str, Any] = Field(description=f"any JSON object, at most {REPORT_BYTES} bytes")


class Stored(BaseModel):
    stored: bool = Field(description="false when this id was stored before (a retry)")


router = APIRouter(prefix="/report/v1", tags=["reporting"])
bearer = HTTPBearer(auto_error=False)


async def member_of(credentials: Annotated[HTTPAuthorizationCredentials | None,
                                           Depends(bearer)],
                    signer: Signer, web: State, now: Now) -> AsyncIterator[MemberKey]:
    """The member a valid workload token is bound to (401 otherwise), while the token still
    stands (403 otherwise); holds a query slot from the token's verification on."""
    if credentials is None:
        raise HTTPException(401, "a workload token is required",
                            headers={"WWW-Authenticate": "Bearer"})
    try:
        claims = signer.verify_workload(credentials.credentials, now=now.timestamp())
    except TokenError as exc:
        raise HTTPException(401, f"workload token refused: {exc}",
                            headers={"WWW-Authenticate": "Bearer"}) from None
    member = claims.member
    # One share for a run's workloads: a job's many members are one caller.
    async with web.slots.held_by(f"run:{member.run_id}"):  # a query slot (slots.QuerySlots)
        async with web.pool.acquire() as conn:
            attempt = await standing.attempt_facts(conn, member.run_id, member.attempt)
            node = None if claims.node is None else await standing.node_facts(conn, claims.node)
        refused = standing.refusal(claims, attempt, node,
                                   drain_seconds=web.settings.drain_seconds)
        if refused is not None:
            raise HTTPException(403, refused)
        yield member


Member = Annotated[MemberKey, Depends(member_of)]


def check(member: MemberKey, post: Identity) -> None:
    if MemberKey(post.run_id, post.attempt, post.member) != member:
        raise HTTPException(403, f"this post is for {post.run_id}/{post.attempt}/"
                                 f"{post.member}, not the token's member {member}")


@router.post("/lifecycle", response_model=Stored)
async def lifecycle(member: Member, pool: Pool, post: Lifecycle) -> Stored:
    check(member, post)
    async with pool.acquire() as conn:
        stored = await posts.add_event(conn, member, post.id, post.event, post.at,
                                         post.detail)
    return Stored(stored=stored)


@router.post("/logs", response_model=Stored)
async def logs(member: Member, pool: Pool, post: Logs) -> Stored:
    check(member, post)
    async with pool.acquire() as conn:
        stored = await posts.add_logs(conn, member, post.id,
                                        [(line.at, line.level, line.message)
                                         for line in post.lines])
    return Stored(stored=stored)


@router.post("/reports", response_model=Stored)
async def reports(member: Member, pool: Pool, post: Report) -> Stored:
    check(member, post)
    size = json_bytes(post.body)
    if size > REPORT_BYTES:
        raise HTTPException(413, f"report body is {size} bytes as JSON; at most {REPORT_BYTES}")
    body = json.dumps(post.body)
    async with pool.acquire() as conn:
        stored = await posts.add_report(conn, member, post.id, post.name, body)
    return Stored(stored=stored)
