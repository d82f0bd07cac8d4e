"""``tuneplane-web``: serve the HTTP API, the sign-in and Charts pages, and the reporting
path."""

from __future__ import annotations

import argparse
import gc
import os
import sys

import uvicorn

from tuneplane.common.metrics import exposition
from tuneplane.contract import flags
from tuneplane.contract.settings import SettingsError
from tuneplane.web import logs
from tuneplane.web.app import create_app
from tuneplane.web.settings import WebSettings


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="tuneplane-web",
        description="Bounded curve queries over HTTP (the OpenAPI document at "
                    "/openapi.json), the Charts page at /runs/<run>/charts and the HTTP reporting "
                    "path at /report/v1 (what TUNEPLANE_INGEST_URL points at). Reads "
                    "TUNEPLANE_DATABASE_URL, TUNEPLANE_WEB_JWT_SECRET, for rich-record "
                    "downloads TUNEPLANE_S3_ENDPOINT/TUNEPLANE_S3_BUCKET and, to serve HTTPS, "
                    "TUNEPLANE_WEB_TLS_CERT/TUNEPLANE_WEB_TLS_KEY.")
    p.add_argument("--host", default="0.0.0.0", help="address to listen on (default 0.0.0.0)")
    p.add_argument("--port", type=int, default=8080, help="HTTP port (default 8080)")
    flags.add_to(p, WebSettings)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        settings = flags.settings(WebSettings, os.environ, args)
        app = create_app(settings)
        exposition.serve(settings.metrics_port, args.host)
    except (SettingsError, ValueError, OSError) as exc:
        print(f"tuneplane-web: {exc}", file=sys.stderr)
        return 2
    # What startup built (modules, the app, its routes and models) lives as long as the
    # process: frozen, no full collection walks it again (a 70-90 ms pause, measured, in
    # the middle of a request otherwise).
    gc.freeze()
    # With a certificate uvicorn serves HTTPS: the scheme is https, so answers carry HSTS.
    # The access log leaves out a sign-in link's secret (logs.RedactSecrets). uvloop and
    # httptools, named rather than found: a reply's event loop and HTTP parsing in C.
    uvicorn.run(app, host=args.host, port=args.port, log_level="info", loop="uvloop",
                http="httptools",
                log_config=logs.log_config(),
                ssl_certfile=settings.tls_cert, ssl_keyfile=settings.tls_key,
                proxy_headers=True, forwarded_allow_ips=settings.forwarded_allow_ips)
    return 0


if __name__ == "__main__":
    sys.exit(main())
