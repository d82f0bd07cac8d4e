"""The validating admission webhook for TelemetryDestinations (aiohttp, HTTPS with the
certificate the chart makes): the API server asks it before storing a created or changed
resource, and stores nothing it refuses. The answer is what ``tuneplane destinations
apply`` would say (the same ``fleet.composable``, against the release's resources already
stored), with the field's path, so ``kubectl apply`` shows it; a sink names only a Secret
made for sinks (``scope``); and a secret given inline is refused, since a custom resource
is readable by whoever may list it, unlike the Secret ``secretRef`` names.

The API server asks it about the release's resources only (the chart's ``objectSelector``
on the ``tuneplane.dev/release`` label; on an update, either version labelled for the
release); one whose new version is not labelled for the release is another's to judge,
and allowed here. A review is read up to ``MAX_REVIEW_BYTES`` (a spec is at most 64 KiB,
``limits``; a bigger one is still read, to be refused with its size).
"""

from __future__ import annotations

import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from tuneplane.controlplane.destinations.fleet import composable, name_of, usable
from tuneplane.destinations.passthrough import values
from tuneplane.destinations.redaction import secret_key
from tuneplane.destinations.resource import SECRETS_ROOT, DestinationError
from tuneplane.exporter.kube.resources import document
from tuneplane.exporter.kube.scope import selected

PATH = "/validate"
#: What a review may weigh: an object the API server stores is at most ~1.5 MiB (etcd).
MAX_REVIEW_BYTES = 1_600_000
#: The release's resources already stored.
Others = Callable[[], Awaitable[list[dict[str, Any]]]]


@dataclass(frozen=True, slots=True)
class Scope:
    """The release the webhook judges for: its label value, its sinks' Secret prefix and
    the secrets root its collector is composed with."""

    release: str
    secret_prefix: str
    secrets_root: str = SECRETS_ROOT


def inline_secret(destination_document: dict[str, Any]) -> str | None:
    """Why the document holds a secret inline (the field's path first), or None."""
    spec = destination_document.get("spec", {})
    parts = [(f"spec.sinks[{i}].config", sink.get("config", {}))
             for i, sink in enumerate(spec.get("sinks", []))]
    parts += [(f"spec.extensions.{key}", value)
              for key, value in spec.get("extensions", {}).items()]
    for path, settings in parts:
        for where, key, text in values(settings, path):
            if text and secret_key(key):
                return (f"{where}: a secret given inline (anyone who may read "
                        "TelemetryDestinations would see it); put it in the Secret the "
                        "sink's secretRef names and give its file (auth.bearerToken.key, or "
                        "a file field relative to the sink's directory)")
    return None


async def judge(resource: dict[str, Any], others: Others, scope: Scope) -> str | None:
    """Why ``resource`` is refused, or None when it may be stored."""
    if not selected(resource, scope.release):
        return None  # not (or no longer) the release's: composed by another, if any
    made = document(resource)
    name = name_of(made)
    try:
        stored = [document(r) for r in await others()
                  if selected(r, scope.release) and r["metadata"]["name"] != name]
        taken = usable(stored, secret_prefix=scope.secret_prefix,
                       secrets_root=scope.secrets_root).usable
        composable(made, taken, secret_prefix=scope.secret_prefix,
                   secrets_root=scope.secrets_root)
        secret = inline_secret(made)
        if secret is not None:
            raise DestinationError(f"{name}: {secret}")
    except DestinationError as exc:
        return str(exc)
    return None


def answer(review: dict[str, Any], refused: str | None) -> dict[str, Any]:
    response: dict[str, Any] = {"uid": review["request"]["uid"], "allowed": refused is None}
    if refused is not None:
        response["status"] = {"code": 422, "reason": "Invalid", "message": refused}
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "response": response}


def application(others: Others, scope: Scope) -> web.Application:
    async def validate(request: web.Request) -> web.Response:
        try:
            review = await request.json()
            resource = review["request"]["object"]
        except (ValueError, KeyError, TypeError, RecursionError):
            return web.json_response({"message": "not an AdmissionReview"}, status=400)
        return web.json_response(answer(review, await judge(resource, others, scope)))

    async def healthz(_: web.Request) -> web.Response:
        return web.Response(text="ok")

    app = web.Application(client_max_size=MAX_REVIEW_BYTES)
    app.router.add_post(PATH, validate)
    app.router.add_get("/healthz", healthz)
    return app


async def serve(app: web.Application, port: int, cert: str, key: str) -> web.AppRunner:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "0.0.0.0", port, ssl_context=context).start()
    return runner
