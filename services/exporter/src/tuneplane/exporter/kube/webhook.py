"""The validating admission webhook for TelemetryDestinations (aiohttp, HTTPS with the
certificate the chart makes): the API server asks it before storing a created or changed
resource, and stores nothing it refuses. The answer is what ``tuneplane destinations
apply`` would say (the same ``parse`` and ``check_together``, against the resources
already stored), with the field's path, so ``kubectl apply`` shows it; and a secret given
inline is refused, since a custom resource is readable by whoever may list it, unlike the
Secret ``secretRef`` names.
"""

from __future__ import annotations

import ssl
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from tuneplane.controlplane.destinations.compose import check_together
from tuneplane.controlplane.destinations.fleet import name_of, usable
from tuneplane.controlplane.destinations.passthrough import values
from tuneplane.controlplane.destinations.redaction import secret_key
from tuneplane.controlplane.destinations.resource import DestinationError, parse
from tuneplane.exporter.kube.resources import document

PATH = "/validate"
Others = Callable[[], Awaitable[list[dict[str, Any]]]]


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


async def judge(resource: dict[str, Any], others: Others) -> str | None:
    """Why ``resource`` is refused, or None when it may be stored."""
    made = document(resource)
    name = name_of(made)
    try:
        destination = parse(made, name)
        secret = inline_secret(made)
        if secret is not None:
            raise DestinationError(f"{name}: {secret}")
        stored = [document(r) for r in await others() if r["metadata"]["name"] != name]
        check_together([*usable(stored).usable, destination])
    except DestinationError as exc:
        return str(exc)
    return None


def answer(review: dict[str, Any], refused: str | None) -> dict[str, Any]:
    response: dict[str, Any] = {"uid": review["request"]["uid"], "allowed": refused is None}
    if refused is not None:
        response["status"] = {"code": 422, "reason": "Invalid", "message": refused}
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "response": response}


def application(others: Others) -> web.Application:
    async def validate(request: web.Request) -> web.Response:
        try:
            review = await request.json()
            resource = review["request"]["object"]
        except (ValueError, KeyError, TypeError):
            return web.json_response({"message": "not an AdmissionReview"}, status=400)
        return web.json_response(answer(review, await judge(resource, others)))

    async def healthz(_: web.Request) -> web.Response:
        return web.Response(text="ok")

    app = web.Application(client_max_size=3 * 1024 * 1024)
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
