"""Failed sign-ins are counted per user name and per address over a window: past a limit a
sign-in is turned away unchecked until the oldest failure ages out; a success clears its
user name's count; other users and addresses are unaffected."""

from __future__ import annotations

import asyncpg
import httpx
from fastapi import FastAPI

from tests.support.clock import Clock
from tests.support.credentials import add_user
from tuneplane.controlplane import passwords
from tuneplane.web.auth.throttle import PER_ADDRESS, PER_USER, WINDOW_SECONDS, Throttle


def test_a_user_name_past_its_failures_waits_for_the_oldest_to_age_out() -> None:
    clock = Clock()
    throttle = Throttle(clock=clock)
    for _ in range(PER_USER):
        assert throttle.wait("alice", "10.0.0.1") == 0
        throttle.failed("alice", "10.0.0.1")
        clock.now += 1
    assert throttle.wait("alice", "10.0.0.2") == WINDOW_SECONDS - PER_USER
    assert throttle.wait("bob", "10.0.0.1") == 0
    clock.now += WINDOW_SECONDS - PER_USER
    assert throttle.wait("alice", "10.0.0.1") == 0  # the oldest failure aged out


def test_an_address_past_its_failures_waits_and_a_success_clears_the_name() -> None:
    clock = Clock()
    throttle = Throttle(clock=clock)
    for i in range(PER_ADDRESS):
        throttle.failed(f"user-{i}", "10.0.0.9")
    assert throttle.wait("anyone", "10.0.0.9") == WINDOW_SECONDS
    assert throttle.wait("anyone", "10.0.0.8") == 0
    throttle.failed("carol", "10.0.0.7")
    throttle.succeeded("carol")
    assert all(throttle.wait("carol", f"10.1.0.{i}") == 0 for i in range(3))


async def test_sign_ins_past_the_limit_are_turned_away_unchecked(
        web_app: FastAPI, db: asyncpg.Connection) -> None:
    name = await add_user(db, "guessed", roles={"default": "viewer"})
    await passwords.set_password(db, name, "the right password")
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=web_app),
                                 base_url="https://tuneplane-web") as http:
        wrong = [await http.post("/auth/login", data={"username": name,
                                                      "password": f"guess {i:04d}!!"})
                 for i in range(PER_USER)]
        right = await http.post("/auth/login", data={"username": name,
                                                     "password": "the right password"})
    assert [w.status_code for w in wrong] == [401] * PER_USER
    assert right.status_code == 429
    assert int(right.headers["retry-after"]) > 0
    assert "Too many failed sign-ins" in right.text
    assert "set-cookie" not in right.headers
