"""The Kubernetes API, through kr8s (authentication in a pod by its service account, or
from ``KUBECONFIG`` elsewhere; credentials renewed when they expire): one call, JSON in and
out, for the services that use the API (the exporter's destinations, control's launches).

A refusal of the API server's is kr8s' ``ServerError`` (its ``response`` carries the status);
``not_found`` tells the one the callers branch on.
"""

from __future__ import annotations

import json
from typing import Any, Self

import kr8s
import kr8s.asyncio

JSON_MERGE = "application/merge-patch+json"
APPLY = "application/apply-patch+yaml"


def not_found(exc: BaseException) -> bool:
    """Whether ``exc`` is the API server's 404."""
    response = getattr(exc, "response", None)
    return isinstance(exc, kr8s.ServerError) and getattr(response, "status_code", 0) == 404


def conflict(exc: BaseException) -> bool:
    """Whether ``exc`` is the API server's 409 (the object exists already)."""
    response = getattr(exc, "response", None)
    return isinstance(exc, kr8s.ServerError) and getattr(response, "status_code", 0) == 409


class Kubernetes:
    """One API connection (kr8s)."""

    def __init__(self, api: kr8s.asyncio.Api) -> None:
        self.api = api

    @classmethod
    async def connect(cls) -> Self:
        """In a pod: its service account; elsewhere: ``KUBECONFIG``."""
        return cls(await kr8s.asyncio.api())

    async def call(self, method: str, version: str, url: str, *, namespace: str | None = None,
                   body: Any = None, content_type: str = "application/json",
                   params: dict[str, str] | None = None) -> Any:
        kwargs: dict[str, Any] = {}
        if body is not None:
            kwargs["content"] = json.dumps(body)
            kwargs["headers"] = {"Content-Type": content_type}
        if params:
            kwargs["params"] = params
        async with self.api.call_api(method, version=version, url=url, namespace=namespace,
                                     **kwargs) as response:
            return response.json()
