"""tuneplane-web's logging: uvicorn's own configuration, with the access log never holding a
secret an address carries (a one-time sign-in link's, ``sign_in_links.PARAMETER``). The
link's page spends nothing, so a secret written to the log would stay good for minutes to
anyone who reads it (a log file, a collector)."""

from __future__ import annotations

import copy
import logging
from typing import Any, Final
from urllib.parse import unquote_plus

import uvicorn.config

from tuneplane.controlplane import sign_in_links

#: The query parameters whose values an access line never shows.
SECRET_PARAMETERS: Final = frozenset({sign_in_links.PARAMETER})
REDACTED: Final = "[redacted]"


def redacted(target: str) -> str:
    """A request target (path and query) with the secret parameters' values replaced."""
    path, mark, query = target.partition("?")
    if not mark:
        return target
    parts = []
    for part in query.split("&"):
        name, equals, _ = part.partition("=")
        secret = unquote_plus(name) in SECRET_PARAMETERS
        parts.append(f"{name}={REDACTED}" if secret and equals else part)
    return f"{path}?{'&'.join(parts)}"


class RedactSecrets(logging.Filter):
    """On uvicorn's access logger: its line's request target with secrets left out."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        # uvicorn's access line: (client, method, path with query, HTTP version, status)
        if isinstance(args, tuple) and len(args) == 5 and isinstance(args[2], str):
            record.args = (*args[:2], redacted(args[2]), *args[3:])
        return True


def log_config() -> dict[str, Any]:
    """uvicorn's default logging configuration, its access lines redacted."""
    config = copy.deepcopy(uvicorn.config.LOGGING_CONFIG)
    config.setdefault("filters", {})["redact_secrets"] = {"()": RedactSecrets}
    config["loggers"]["uvicorn.access"]["filters"] = ["redact_secrets"]
    return config
