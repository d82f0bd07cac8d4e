"""The web service's Prometheus metrics (declared names; counters are exposed with
``_total``), served on a port of their own, never the public API's (``--metrics-port``).

Requests are labelled by the route template that answered them (``/api/v1/runs/{run_id}``),
never by the raw path: one series per route, whatever ids the callers send. A request no
route took (a static file, a path that is not there, one refused before routing) is
``other``; a method that is not HTTP's is ``OTHER``."""

from __future__ import annotations

import time

from prometheus_client import Counter, Histogram
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tuneplane.common.metrics.gauges import PoolGauges

UNROUTED = "other"
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
#: Seconds: a page of runs takes milliseconds, a bounded query of many series up to seconds.
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

REQUESTS = Counter("tuneplane_web_requests", "HTTP requests answered, by route template, "
                   "method and status code", ["route", "method", "code"])
LATENCY = Histogram("tuneplane_web_request_duration_seconds",
                    "Time to answer a request (its whole body sent), by route template and "
                    "method", ["route", "method"], buckets=BUCKETS)
POOL = PoolGauges("tuneplane_web")


def route_of(scope: Scope) -> str:
    """The template of the route that took the request (set on the scope by routing)."""
    path = getattr(scope.get("route"), "path_format", None)
    return path if isinstance(path, str) else UNROUTED


class RouteTimer:
    """ASGI middleware counting and timing every HTTP request, outermost so that the
    requests refused before routing (413, 429, 503) are counted too."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500  # what the server answers when the app raises before it starts one

        async def watched(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self._app(scope, receive, watched)
        finally:
            method = scope["method"] if scope["method"] in METHODS else "OTHER"
            route = route_of(scope)
            REQUESTS.labels(route, method, str(status)).inc()
            LATENCY.labels(route, method).observe(time.perf_counter() - started)
