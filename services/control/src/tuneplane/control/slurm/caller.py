"""Who calls SlurmJobControl under a job credential (``TokenKind.SLURM_JOB``): the
collector of one node and start of a launch's job, for one attempt."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NoReturn

import grpc

from tuneplane.common.gateway.listener import bearer_token
from tuneplane.common.tokens import TokenError, TokenKind, TokenSigner
from tuneplane.control.calls import Context
from tuneplane.controlplane.errors import LaunchError, NotYet


@dataclass(frozen=True, slots=True)
class JobCaller:
    """The collector a job credential was issued to."""

    launch_id: int
    restart: int
    node_index: int
    run_id: str
    attempt: int


def job_caller(signer: TokenSigner, context: Context, now: float) -> JobCaller | str:
    """The caller its job credential names, or why it is refused."""
    token = bearer_token(context)
    if token is None:
        return "a job credential is needed (authorization: Bearer)"
    try:
        c: dict[str, Any] = signer.verify(token, TokenKind.SLURM_JOB, now=now)
        return JobCaller(int(c["launch"]), int(c["restart"]), int(c["node"]), str(c["run"]),
                         int(c["attempt"]))
    except (TokenError, KeyError, TypeError, ValueError) as exc:
        return f"job credential refused: {exc}"


async def refuse(context: Context, message: str) -> NoReturn:
    await context.abort(grpc.StatusCode.FAILED_PRECONDITION, message)
    raise AssertionError("unreachable")  # abort raises


async def launch_refused(context: Context, exc: LaunchError) -> NoReturn:
    """``exc``'s answer: UNAVAILABLE for what has not shown yet (the collector retries with
    backoff), else refused for good."""
    if isinstance(exc, NotYet):
        await context.abort(grpc.StatusCode.UNAVAILABLE, str(exc))
    await refuse(context, str(exc))
