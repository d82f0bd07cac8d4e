"""Bounded before trusted: request bodies over their bound are refused (413) before they are
parsed, by Content-Length or while they stream; the reporting path has its own bounds and
refuses tokens that no longer stand; and only authenticated requests take a query slot,
without waiting for one."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import asyncpg
import httpx
import jwt
import pytest
from fastapi import FastAPI

from tests.support import credentials
from tests.support.control import new_run
from tests.support.environment import Endpoints
from tests.support.web import Connect
from tuneplane.common.tokens import TokenKind, TokenSigner
from tuneplane.controlplane import runs
from tuneplane.telemetry.v1.identity import MemberKey
from tuneplane.web import state
from tuneplane.web.app import create_app
from tuneplane.web.auth.oidc_settings import OidcSettings
from tuneplane.web.routes.reporting import DETAIL_BYTES
from tuneplane.web.settings import WebSettings
from tuneplane.web.state import QUEUED_PER_SLOT

MIB = 1 << 20
CHUNK = 64 * 1024


class Body:
    """A JSON request body (``{"pad": "xx..."}``) streamed in chunks, counting how many the
    server asked for; with ``pause``, it waits after the first chunk until ``resume``."""

    def __init__(self, chunks: int, *, pause: bool = False) -> None:
        self.chunks = chunks
        self.pulled = 0
        self.asked_for_more = asyncio.Event()
        self.resume = asyncio.Event()
        if not pause:
            self.resume.set()

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for i in range(self.chunks):
            if self.pulled == 1:
                self.asked_for_more.set()
                await self.resume.wait()
            self.pulled += 1
            head = b'{"pad": "' if i == 0 else b""
            tail = b'"}' if i == self.chunks - 1 else b""
            yield head + b"x" * (CHUNK - len(head) - len(tail)) + tail


async def test_a_body_declared_over_its_bound_is_refused_before_it_is_read(
        api: Connect) -> None:
    body = Body(32)
    async with api(path="/api/v1") as anonymous:
        answer = await anonymous.post("/runs", content=body.__aiter__(),
                                      headers={"Content-Length": str(32 * CHUNK),
                                               "Content-Type": "application/json"})
    assert answer.status_code == 413
    assert answer.json()["detail"] == (f"the request body of /api/v1/runs declares "
                                       f"{32 * CHUNK} bytes; its bound is {MIB} bytes")
    assert body.pulled == 0  # not a byte read, let alone parsed


async def test_a_streamed_body_over_its_bound_is_refused_while_it_streams(
        client: httpx.AsyncClient) -> None:
    body = Body(64)  # 4 MiB, chunked: no Content-Length to check
    answer = await client.post("/api/v1/runs", content=body.__aiter__(),
                               headers={"Content-Type": "application/json"})
    assert answer.status_code == 413
    assert answer.json()["detail"] == f"the request body of /api/v1/runs is over its bound " \
                                      f"of {MIB} bytes"
    assert body.pulled == MIB // CHUNK + 1  # reading stopped at the bound


@pytest.fixture
def me(run_id: str) -> dict[str, object]:
    return {"run_id": run_id, "attempt": 1, "member": "rank-0"}


@pytest.fixture
def sdk_token(initialised: Endpoints, run_id: str) -> str:
    return TokenSigner(initialised.jwt_secret).issue_workload(
        MemberKey(run_id, 1, "rank-0"), now=time.time(), ttl_seconds=600)


async def test_the_reporting_path_bounds_details_logs_and_reports(
        api: Connect, sdk_token: str, me: dict[str, object]) -> None:
    async with api(sdk_token, path="/report/v1") as sdk:
        detail = {"trace": "x" * (DETAIL_BYTES + 10)}
        event = {**me, "id": "ev-big", "event": "failed", "at": 1.0, "detail": detail}
        answer = await sdk.post("/lifecycle", json=event)
        assert answer.status_code == 422
        assert f"at most {DETAIL_BYTES}" in json.dumps(answer.json())
        huge = await sdk.post("/lifecycle", json={**event, "detail": {"trace": "x" * MIB}})
        assert huge.status_code == 413
        assert "request body of /report/v1/lifecycle" in huge.json()["detail"]
        lines = [{"at": 1.0, "message": "y" * 16_000} for _ in range(200)]  # 3.2 MB
        many = await sdk.post("/logs", json={**me, "id": "log-big", "lines": lines})
        assert many.status_code == 413
        assert "request body of /report/v1/logs" in many.json()["detail"]
        fits = await sdk.post("/logs", json={**me, "id": "log-ok", "lines": lines[:60]})
        assert fits.json() == {"stored": True}
        report = {**me, "id": "r-big", "name": "eval", "body": {"blob": "z" * (MIB + MIB // 2)}}
        assert (await sdk.post("/reports", json=report)).status_code == 413


async def test_the_reporting_path_refuses_tokens_of_attempts_ended_long_ago(
        api: Connect, initialised: Endpoints, db: asyncpg.Connection, run_id: str,
        sdk_token: str, me: dict[str, object]) -> None:
    await new_run(db, run_id)
    assert await runs.start_attempt(db, run_id) == 1
    assert await runs.end_attempt(db, run_id, 1, "cancelled")
    event = {**me, "id": "ev-late", "event": "finished", "at": 1.0}
    async with api(sdk_token, path="/report/v1") as sdk:
        assert (await sdk.post("/lifecycle", json=event)).json() == {"stored": True}
        await db.execute("UPDATE attempts SET ended_at = now() - interval '10 minutes' "
                         "WHERE run_id = $1", run_id)
        late = await sdk.post("/lifecycle", json={**event, "id": "ev-later"})
    assert late.status_code == 403
    assert f"run {run_id!r} attempt 1 ended (cancelled)" in late.json()["detail"]


@asynccontextmanager
async def app_with_slots(endpoints: Endpoints, wait: float,
                         per_caller: int = 48) -> AsyncIterator[FastAPI]:
    """The app with a single query slot, for which a request waits ``wait`` seconds."""
    app = create_app(WebSettings(database_url=endpoints.database_url,
                                 jwt_secret=endpoints.jwt_secret, concurrent_queries=1,
                                 query_wait_seconds=wait, queries_per_caller=per_caller,
                                 oidc=OidcSettings()))
    async with app.router.lifespan_context(app):
        yield app


@pytest.fixture
async def one_slot(initialised: Endpoints) -> AsyncIterator[FastAPI]:
    """The app with a single query slot, and no wait for it."""
    async with app_with_slots(initialised, 0) as app:
        yield app


def connect(app: FastAPI, token: str | None = None) -> httpx.AsyncClient:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                             base_url="http://tuneplane-web/api/v1", headers=headers)


async def test_a_body_without_a_signed_token_is_refused_before_it_is_read(
        api: Connect, sdk_token: str, user_token: str) -> None:
    for path, token in (("/api/v1/runs", None), ("/api/v1/runs", "forged"),
                        ("/api/v1/runs", sdk_token), ("/report/v1/logs", user_token)):
        body = Body(4)
        async with api(token) as caller:
            answer = await caller.post(path, content=body.__aiter__(),
                                       headers={"Content-Type": "application/json"})
        assert answer.status_code == 401, (path, answer.text)
        assert answer.headers["WWW-Authenticate"] == "Bearer"
        assert body.pulled == 0, path  # nothing unauthenticated is read, let alone parsed


async def test_an_unauthenticated_request_never_holds_a_query_slot(
        one_slot: FastAPI, initialised: Endpoints, user_token: str) -> None:
    expired = TokenSigner(initialised.jwt_secret).issue(
        TokenKind.USER, "someone", {"jti": "tok_gone"}, now=time.time() - 7200, ttl_seconds=60)
    slow = Body(4, pause=True)
    async with connect(one_slot, expired) as stale, connect(one_slot, user_token) as user:
        pending = asyncio.create_task(stale.post(
            "/runs", content=slow.__aiter__(), headers={"Content-Type": "application/json"}))
        await slow.asked_for_more.wait()  # in flight, its body half read
        assert not state.of(one_slot).slots.locked()
        assert (await user.get("/runs")).status_code == 200
        slow.resume.set()
        refused = await pending
    assert refused.status_code == 401
    assert "token expired" in refused.json()["detail"]


async def test_past_its_slots_an_authenticated_request_is_answered_503_at_once(
        one_slot: FastAPI, user_token: str) -> None:
    slots = state.of(one_slot).slots
    async with connect(one_slot, user_token) as user, connect(one_slot) as anonymous, \
            connect(one_slot, "forged") as forged:
        async with slots:  # every slot taken by an authenticated request in flight
            assert slots.locked()
            busy = await user.get("/runs")
            assert busy.status_code == 503
            assert busy.headers["Retry-After"] == "1"
            assert (await anonymous.get("/runs")).status_code == 401
            assert (await forged.get("/runs")).status_code == 401
        assert (await user.get("/runs")).status_code == 200


async def test_a_request_waits_its_turn_for_a_slot_within_the_wait_and_the_queue(
        initialised: Endpoints, user_token: str, db: asyncpg.Connection) -> None:
    tokens = [await credentials.user_token(db, initialised, f"queued{i}")
              for i in range(QUEUED_PER_SLOT + 1)]
    async with app_with_slots(initialised, 30) as app:
        slots = state.of(app).slots
        callers = [connect(app, token) for token in tokens]
        async with slots:  # the only slot taken
            waiting = [asyncio.create_task(c.get("/runs")) for c in callers[:QUEUED_PER_SLOT]]
            while slots.waiting < QUEUED_PER_SLOT:  # all four in the queue
                await asyncio.sleep(0.01)
            over = await callers[-1].get("/runs")  # a fifth: the queue is full, refused at once
            assert over.status_code == 503
            assert over.headers["Retry-After"] == "1"
            assert not any(task.done() for task in waiting)
        # the slot freed: each waiting request has its turn and its answer
        assert [(await task).status_code for task in waiting] == [200] * QUEUED_PER_SLOT
        for caller in callers:
            await caller.aclose()
    async with app_with_slots(initialised, 0.2) as app, connect(app, user_token) as user:
        async with state.of(app).slots:
            late = await user.get("/runs")  # no slot came free within the wait
        assert late.status_code == 503
        assert "within 0.2 s" in late.json()["detail"]


def name_of(token: str) -> str:
    return str(jwt.decode(token, options={"verify_signature": False})["sub"])


async def test_one_caller_runs_its_share_of_the_slots_waits_among_its_own_and_is_bounded(
        initialised: Endpoints, user_token: str, db: asyncpg.Connection) -> None:
    other = await credentials.user_token(db, initialised, "other")
    async with app_with_slots(initialised, 30, per_caller=3) as app, \
            connect(app, user_token) as user, connect(app, other) as someone:
        slots = state.of(app).slots
        mine = f"user:{name_of(user_token)}"
        async with slots:  # the only slot taken: callers wait
            first = asyncio.create_task(user.get("/runs"))
            while slots.waiting < 1:  # its one turn (a quarter of one slot: one) queued
                await asyncio.sleep(0.01)
            more = [asyncio.create_task(user.get("/runs")) for _ in range(2)]
            while slots.requests_of(mine) < 3:
                await asyncio.sleep(0.01)
            assert slots.waiting == 1  # its others wait among its own, not in the queue
            fourth = await user.get("/runs")  # past its requests: refused at once
            assert fourth.status_code == 429
            assert fourth.headers["Retry-After"] == "1"
            assert "already 3 queries of yours" in fourth.json()["detail"]
            theirs = asyncio.create_task(someone.get("/runs"))  # another caller still queues
            while slots.waiting < 2:
                await asyncio.sleep(0.01)
        assert [(await t).status_code for t in (first, *more, theirs)] == [200] * 4
        assert slots.requests_of(mine) == 0  # nothing kept of it
        assert (await user.get("/runs")).status_code == 200
