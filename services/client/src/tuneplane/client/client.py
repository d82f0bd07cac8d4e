"""The connection to a Tuneplane web service, and the runs it lists.

``Client(url, token)`` takes the service's address and an API token (``tuneplane-admin
user-token``, or a token the web's Tokens page made), from ``TUNEPLANE_URL`` and
``TUNEPLANE_TOKEN`` when not given. Every call is one bounded request; lists are followed
page by page, so nothing is held beyond a page.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, NoReturn

import httpx

if TYPE_CHECKING:
    from tuneplane.client.run import Run

API = "/api/v1"
#: Rows asked for in one page of the runs table (the service's bound is 500).
PAGE = 200


class ClientError(RuntimeError):
    """The service refused or failed a call; the message says which and why."""


@dataclass(frozen=True, slots=True)
class RunRow:
    """A run as the runs table lists it."""

    run_id: str
    project: str
    created_at: datetime | None
    attempt: int | None  # the latest
    state: str  # the latest managed attempt's; "none" without one
    members: int
    points: int
    last_batch_at: datetime | None

    @classmethod
    def of(cls, row: Mapping[str, Any]) -> RunRow:
        when = {k: datetime.fromisoformat(row[k]) if row.get(k) else None
                for k in ("created_at", "last_batch_at")}
        return cls(row["run_id"], row["project"], when["created_at"], row.get("attempt"),
                   row["state"], int(row["members"]), int(row["points"]),
                   when["last_batch_at"])


@dataclass(frozen=True, slots=True)
class Defaults:
    """Where the client connects when not told: ``TUNEPLANE_URL`` and ``TUNEPLANE_TOKEN``."""

    url: str | None
    token: str | None

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> Defaults:
        return cls(environ.get("TUNEPLANE_URL") or None, environ.get("TUNEPLANE_TOKEN") or None)


def given(params: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The parameters set (None values left out); None for none at all: a ``Link``'s path
    carries its query, which parameters, even empty ones, would replace."""
    return None if params is None else {k: v for k, v in params.items() if v is not None}


def refused(answer: httpx.Response, method: str) -> NoReturn:
    """The service's refusal as a ``ClientError``: the call, the status and its reason."""
    try:
        reason = answer.json().get("detail", answer.text)
    except (ValueError, AttributeError):
        reason = answer.text
    raise ClientError(f"{method} {answer.request.url.path}: {answer.status_code} {reason}")


class Client:
    def __init__(self, url: str | None = None, token: str | None = None, *,
                 timeout: float = 120.0, transport: httpx.BaseTransport | None = None) -> None:
        given = Defaults.from_environ(os.environ)
        url, token = url or given.url, token or given.token
        if not url:
            raise ClientError("no Tuneplane address: give Client(url=...) or set TUNEPLANE_URL "
                              "(for example https://tuneplane.example)")
        if not token:
            raise ClientError("no API token: give Client(token=...) or set TUNEPLANE_TOKEN "
                              "(tuneplane-admin user-token, or the web's Tokens page)")
        self.url = url.rstrip("/")
        self._http = httpx.Client(base_url=self.url, timeout=timeout, transport=transport,
                                  headers={"Authorization": f"Bearer {token}"})

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def get(self, path: str, params: Mapping[str, Any] | None = None) -> httpx.Response:
        """``GET`` of ``path`` (under ``/api/v1``, or a whole path the service gave, as a
        ``Link``); a refusal raises ``ClientError`` with the service's reason."""
        return self.call("GET", path, params=given(params))

    def body(self, path: str, params: Mapping[str, Any] | None = None) -> tuple[bytes, str | None]:
        """``GET`` of ``path`` read whole: its bytes and its ``Link: rel="next"``. The bytes are
        the caller's alone: httpx keeps a response in reference cycles until Python's
        collector runs, so a response holding a page would keep it (a page at a time is the
        whole point of paging)."""
        try:
            with self._http.stream("GET", path if path.startswith(API) else API + path,
                                   params=given(params)) as answer:
                if answer.status_code >= 400:
                    answer.read()
                    refused(answer, "GET")
                parts = list(answer.iter_bytes())
                following: str | None = answer.links.get("next", {}).get("url")
        except httpx.HTTPError as exc:
            raise ClientError(f"{self.url}: {exc}") from None
        return b"".join(parts), following

    def call(self, method: str, path: str, *, json: Any = None,
             params: Mapping[str, Any] | None = None) -> httpx.Response:
        """One request of ``method`` to ``path`` (under ``/api/v1`` unless it starts there),
        with a JSON body when given; a refusal raises ``ClientError`` naming the call, the
        status and the service's reason."""
        try:
            answer = self._http.request(method, path if path.startswith(API) else API + path,
                                        params=params, json=json)
        except httpx.HTTPError as exc:  # no answer at all: the address, the network
            raise ClientError(f"{self.url}: {exc}") from None
        if answer.status_code >= 400:
            refused(answer, method)
        return answer

    def runs(self, *, project: str | None = None, state: str | list[str] | None = None,
             search: str | None = None, sort: str = "created",
             descending: bool = True) -> Iterator[RunRow]:
        """Every run the token may view (of ``project``, in ``state``s, whose id holds
        ``search``), newest first by default, a page at a time."""
        offset = 0
        while True:
            page = self.get("/run-table", {
                "project": project, "state": [state] if isinstance(state, str) else state,
                "q": search, "sort": sort, "dir": "desc" if descending else "asc",
                "limit": PAGE, "offset": offset}).json()
            yield from (RunRow.of(row) for row in page["runs"])
            offset += len(page["runs"])
            if not page["runs"] or offset >= page["total"]:
                return

    def run(self, run_id: str) -> Run:
        from tuneplane.client.run import Run
        return Run(self, run_id)
