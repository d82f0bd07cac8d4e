"""``tuneplane-projector``: run one projector worker of the consumer group."""

from __future__ import annotations

import argparse
import os
import sys

import faust
import prometheus_client

from tuneplane.common.settings import SettingsError, positive_int, require
from tuneplane.projector.app import ProjectorSettings, create_app


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="tuneplane-projector",
        description="Consume the batches topic and project it into PostgreSQL. Start several "
                    "to scale out; they share the partitions of the consumer group. Reads "
                    "TUNEPLANE_DATABASE_URL and TUNEPLANE_KAFKA_BOOTSTRAP.")
    parser.add_argument("--loglevel", default="info", help="faust worker log level")
    parser.add_argument("--metrics-port", type=int, default=0,
                        help="serve Prometheus metrics on this port (default: off)")
    args = parser.parse_args(argv)
    try:
        settings = ProjectorSettings(
            database_url=require(os.environ, "TUNEPLANE_DATABASE_URL"),
            kafka_bootstrap=require(os.environ, "TUNEPLANE_KAFKA_BOOTSTRAP"),
            pool_size=positive_int(os.environ, "TUNEPLANE_PROJECTOR_DB_POOL", 4),
            s3_endpoint=os.environ.get("TUNEPLANE_S3_ENDPOINT") or None,
            s3_bucket=os.environ.get("TUNEPLANE_S3_BUCKET") or None,
            group_batches=positive_int(os.environ, "TUNEPLANE_PROJECTOR_GROUP_BATCHES", 64),
            dead_letters_per_minute=positive_int(
                os.environ, "TUNEPLANE_PROJECTOR_DEAD_LETTERS_PER_MINUTE", 100),
        )
    except SettingsError as exc:
        print(f"tuneplane-projector: {exc}", file=sys.stderr)
        return 2
    if args.metrics_port:
        prometheus_client.start_http_server(args.metrics_port)
    app = create_app(settings)
    worker = faust.Worker(app, loglevel=args.loglevel)
    worker.execute_from_commandline()  # returns only when the worker stops
    return 0


if __name__ == "__main__":
    sys.exit(main())
