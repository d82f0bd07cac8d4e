"""The OpenAPI document as the answers are: FastAPI declares every 422 as a request
validation failure (``detail``: a list of errors), but a value refused by the control plane
(``Invalid``, an integration artifact) is answered 422 with its message as ``detail``
(``exceptions``). The document says both, so a client, and the schema test
(``tests/web/test_fuzz.py``), can check any answer against it."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

#: A refusal's body: what ``exceptions.answer`` writes.
REFUSAL = {"type": "string", "title": "Detail",
           "description": "why the request was refused, naming what and where"}


def honest(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` with a 422's ``detail`` either the validation errors or a refusal."""
    validation = document.get("components", {}).get("schemas", {}).get("HTTPValidationError")
    if validation is not None:
        detail = validation["properties"]["detail"]
        validation["properties"]["detail"] = {"anyOf": [detail, REFUSAL], "title": "Detail"}
    return document


def install(app: FastAPI) -> None:
    """Serve ``honest`` of FastAPI's document at ``/openapi.json`` (made once, then kept)."""
    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = honest(get_openapi(
                title=app.title, version=app.version, description=app.description,
                routes=app.routes))
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
