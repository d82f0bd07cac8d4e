"""``tuneplane-web``: serve the HTTP API (and, later, the Charts page)."""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from pathlib import Path

import uvicorn

from tuneplane.contract.settings import SettingsError, positive_int, require
from tuneplane.web.app import WebSettings, create_app


def settings() -> WebSettings:
    base = WebSettings(
        database_url=require(os.environ, "TUNEPLANE_DATABASE_URL"),
        jwt_secret=require(os.environ, "TUNEPLANE_WEB_JWT_SECRET"),
        s3_endpoint=os.environ.get("TUNEPLANE_S3_ENDPOINT") or None,
        s3_bucket=os.environ.get("TUNEPLANE_S3_BUCKET") or None,
        concurrent_queries=positive_int(os.environ, "TUNEPLANE_WEB_CONCURRENT_QUERIES", 16),
    )
    uplot = os.environ.get("TUNEPLANE_WEB_UPLOT_DIR")
    return dataclasses.replace(base, uplot_dir=Path(uplot)) if uplot else base


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="tuneplane-web",
        description="Bounded curve queries over HTTP (OpenAPI at /openapi.json, docs at "
                    "/docs), the Charts page at /runs/<run>/charts and the HTTP reporting "
                    "path at /report/v1 (what TUNEPLANE_INGEST_URL points at). Reads "
                    "TUNEPLANE_DATABASE_URL, TUNEPLANE_WEB_JWT_SECRET and, for rich-record "
                    "downloads, TUNEPLANE_S3_ENDPOINT/TUNEPLANE_S3_BUCKET.")
    parser.add_argument("--host", default="0.0.0.0")
    parser.add_argument("--port", type=int, default=8080)
    args = parser.parse_args(argv)
    try:
        app = create_app(settings())
    except (SettingsError, ValueError) as exc:
        print(f"tuneplane-web: {exc}", file=sys.stderr)
        return 2
    uvicorn.run(app, host=args.host, port=args.port, log_level="info")
    return 0


if __name__ == "__main__":
    sys.exit(main())
