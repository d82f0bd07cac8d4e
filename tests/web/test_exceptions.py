"""Typed errors become HTTP answers by kind, never by message text (no services needed)."""

from __future__ import annotations

import logging

import asyncpg
import httpx
import pytest
from fastapi import FastAPI

from tuneplane.controlplane import errors
from tuneplane.destinations.resource import DestinationError
from tuneplane.telemetry.v1.integration import IntegrationError
from tuneplane.web.exceptions import HANDLERS

KINDS = {errors.NotFound: 404, errors.Conflict: 409, errors.NotYet: 503, errors.Invalid: 422}
CONCRETE = [e for e in vars(errors).values() if isinstance(e, type)
            and issubclass(e, errors.ControlPlaneError) and e not in KINDS
            and any(issubclass(e, kind) for kind in KINDS)]


def raising(error: Exception) -> FastAPI:
    app = FastAPI(exception_handlers=HANDLERS)

    @app.get("/")
    async def fail() -> None:
        raise error

    return app


async def answer(error: Exception) -> httpx.Response:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=raising(error)),
                                 base_url="http://test") as client:
        return await client.get("/")


def test_every_concrete_control_plane_error_has_a_kind() -> None:
    assert len(CONCRETE) >= 15
    families = (errors.RunError, errors.LaunchError, errors.EnrollmentError, errors.UserError,
                errors.ProjectError)
    assert all(issubclass(e, families) for e in CONCRETE)


@pytest.mark.parametrize("error", CONCRETE, ids=lambda e: e.__name__)
async def test_a_control_plane_error_is_answered_by_its_kind(
        error: type[errors.ControlPlaneError]) -> None:
    status = next(code for kind, code in KINDS.items() if issubclass(error, kind))
    response = await answer(error("it exists; no run, no attempt"))  # words the old code read
    assert response.status_code == status
    assert response.json() == {"detail": "it exists; no run, no attempt"}
    if issubclass(error, errors.NotYet):  # asked again, not given up on
        assert response.headers["Retry-After"] == "1"


@pytest.mark.parametrize(("error", "status", "detail"), [
    (DestinationError("spec.sinks: must contain at least 1 items"), 422,
     "spec.sinks: must contain at least 1 items"),
    (IntegrationError("artifact.sources exists"), 422, "artifact.sources exists"),
    (asyncpg.DataError("invalid input"), 400, "a parameter is outside what the database can "
                                             "store or compare (too large, or not valid text)"),
    (asyncpg.UndefinedTableError('relation "runs" does not exist'), 500,
     "internal error (the database refused the request); it is logged"),
    (asyncpg.CannotConnectNowError("the database system is starting up"), 503,
     "the database is not answering; retry shortly"),
    (asyncpg.QueryCanceledError("canceling statement due to statement timeout"), 503,
     "the query took too long and was cancelled; ask for less (fewer columns, filters or "
     "rows)")],
    ids=["DestinationError", "IntegrationError", "DataError", "UndefinedTable", "Starting",
         "Timeout"])
async def test_other_typed_errors(error: Exception, status: int, detail: str) -> None:
    response = await answer(error)
    assert (response.status_code, response.json()) == (status, {"detail": detail})


@pytest.mark.parametrize("error", [asyncpg.DataError('value "9e99" is out of range for type '
                                                    "bigint"),
                                   asyncpg.UndefinedTableError('relation "runs" does not exist'),
                                   asyncpg.PostgresConnectionError("password authentication "
                                                                   "failed for user tuneplane")])
async def test_database_error_text_never_reaches_the_client(
        error: Exception, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, "tuneplane.web")
    response = await answer(error)
    assert str(error) not in response.text
    assert not any(word in response.text for word in ("bigint", "relation", "password"))
    assert str(error) in caplog.text  # the operator still has it
