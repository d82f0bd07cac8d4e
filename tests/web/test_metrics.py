"""Web requests are counted and timed by the route template that answered them, never by the
raw path (one series per route, whatever ids callers send); what no route took is ``other``,
a method HTTP does not have ``OTHER``. A small app with the middleware, through ASGI."""

from __future__ import annotations

import httpx
from fastapi import FastAPI, HTTPException
from prometheus_client import REGISTRY

from tuneplane.web.metrics import RouteTimer


def app() -> FastAPI:
    made = FastAPI()

    @made.get("/api/v1/runs/{run_id}")
    async def run(run_id: str) -> dict[str, str]:
        if run_id == "gone":
            raise HTTPException(404, "no such run")
        return {"run": run_id}

    made.add_middleware(RouteTimer)
    return made


def count(route: str, method: str, code: str) -> float:
    return REGISTRY.get_sample_value("tuneplane_web_requests_total",
                                     {"route": route, "method": method, "code": code}) or 0.0


def timed(route: str, method: str) -> float:
    return REGISTRY.get_sample_value("tuneplane_web_request_duration_seconds_count",
                                     {"route": route, "method": method}) or 0.0


async def test_requests_are_labelled_by_route_template_not_path() -> None:
    template = "/api/v1/runs/{run_id}"
    before = (count(template, "GET", "200"), count(template, "GET", "404"),
              count("other", "GET", "404"), count("other", "OTHER", "404"),
              timed(template, "GET"))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app()),
                                 base_url="http://test") as client:
        for run_id in ("run-a", "run-b", "gone"):
            await client.get(f"/api/v1/runs/{run_id}")
        assert (await client.get("/nowhere")).status_code == 404
        assert (await client.request("BREW", "/nowhere")).status_code == 404
    after = (count(template, "GET", "200"), count(template, "GET", "404"),
             count("other", "GET", "404"), count("other", "OTHER", "404"),
             timed(template, "GET"))
    assert [a - b for a, b in zip(after, before, strict=True)] == [2, 1, 1, 1, 3]
    paths = {s.labels.get("route") for m in REGISTRY.collect()
             if m.name == "tuneplane_web_requests" for s in m.samples}
    assert not any("run-a" in (p or "") for p in paths)
