"""What answers show of destinations and of the composed configuration: a passthrough
value that can hold a secret is shown as ``MARK``: under a key naming one (password,
secret, token, API key, authorization, credentials, cookie, private key, ``key``, PEM),
every header's value, and a URL's user information. File names are shown (the secret is
in the file). Only answers are redacted, never what the collector is given."""

from __future__ import annotations

import re
from typing import Any

MARK = "<redacted>"
SECRET_KEY = re.compile(r"pass(word|wd|phrase)|secret|token|api_?key|authori[sz]ation|"
                        r"credential|cookie|private_?key|^key$|_pem$")
NOT_SECRET = re.compile(r"(_file|_files|filename|_url|_uri|_endpoint|_dir|_directory)$")
USERINFO = re.compile(r"(?<=://)[^/?#@\s]+@")


def secret_key(key: str) -> bool:
    name = key.lower().replace("-", "_")
    return bool(SECRET_KEY.search(name)) and not NOT_SECRET.search(name)


def redacted(node: Any, headers: bool = False) -> Any:
    """``node`` (passthrough) with its secret values replaced by ``MARK``; ``headers``:
    ``node`` is a map of headers, every value hidden."""
    if isinstance(node, dict):
        return {k: MARK if v is not None and (headers or secret_key(k)) else
                redacted(v, k.lower().replace("-", "_").endswith("headers"))
                for k, v in node.items()}
    if isinstance(node, list):
        return [redacted(v) for v in node]
    if isinstance(node, str):
        return USERINFO.sub(f"{MARK}@", node)
    return node


def document(stored: dict[str, Any]) -> dict[str, Any]:
    """A stored destination as answers show it."""
    spec = dict(stored.get("spec", {}))
    sinks = []
    for sink in spec.get("sinks", []):
        sink = dict(sink)
        if "endpoint" in sink:
            sink["endpoint"] = redacted(sink["endpoint"])
        if "config" in sink:
            sink["config"] = redacted(sink["config"])
        sinks.append(sink)
    if "sinks" in spec:
        spec["sinks"] = sinks
    if "extensions" in spec:
        spec["extensions"] = {key: redacted(value) for key, value in spec["extensions"].items()}
    return {**stored, "spec": spec}


def config(composed: dict[str, Any] | None) -> dict[str, Any] | None:
    """The composed collector configuration as answers show it: each exporter's and
    extension's settings redacted (their ids are not)."""
    if composed is None:
        return None
    return {section: {cid: redacted(body) for cid, body in value.items()}
            if section in ("exporters", "extensions") else value
            for section, value in composed.items()}
