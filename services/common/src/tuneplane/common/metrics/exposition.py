"""The metrics endpoint: ``/metrics`` on a port of its own, never the service's public one
(a deployment publishes the service's port, not this one). Served from a thread, so a busy
event loop still answers a scrape."""

from __future__ import annotations

import logging

import prometheus_client

log = logging.getLogger("tuneplane.metrics")


def serve(port: int, host: str) -> bool:
    """Serve the process's metrics on ``host:port``; 0 leaves them unserved. Returns whether
    they are served. A port taken by another process stops the service here (OSError)."""
    if not port:
        return False
    prometheus_client.start_http_server(port, addr=host)
    log.info("metrics served on http://%s:%d/metrics", host, port)
    return True
