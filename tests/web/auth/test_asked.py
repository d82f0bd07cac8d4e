"""The attempt whose deletion ``on_run`` checks is the attempt the route answers: a path's
attempt is read as the route's own parameter reads it, however it is spelled (no services
needed)."""

from __future__ import annotations

import httpx
import pytest
from fastapi import Depends, FastAPI, Request

from tuneplane.telemetry.v1.limits import MAX_ATTEMPT
from tuneplane.web.auth.access import asked
from tuneplane.web.routes.params import AttemptNo


def app() -> FastAPI:
    application = FastAPI()

    async def checked(request: Request) -> int | None:
        found = asked(request)
        assert found is not None
        return found[1]

    @application.get("/runs/{run_id}/attempts/{attempt}")
    async def served(attempt: AttemptNo, checked: int | None = Depends(checked)) -> dict[
            str, int | None]:
        return {"served": attempt, "checked": checked}

    return application


@pytest.mark.parametrize("segment", ["1", "+1", "1.0", "01", " 1", "1 ", "1_0",
                                     str(MAX_ATTEMPT)])
async def test_the_attempt_checked_is_the_attempt_served(segment: str) -> None:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app()),
                                 base_url="http://test") as client:
        answer = await client.get(f"/runs/r/attempts/{segment}")
    assert answer.status_code == 200, answer.text
    found = answer.json()
    assert found["checked"] == found["served"]


@pytest.mark.parametrize("segment", ["0", "-1", "x", "1.5", "2147483648", "\uff11"])
async def test_what_is_no_attempt_is_checked_as_none_and_refused(segment: str) -> None:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app()),
                                 base_url="http://test") as client:
        answer = await client.get(f"/runs/r/attempts/{segment}")
    assert answer.status_code == 422  # (its check read None: no attempt to answer)
