"""``tuneplane-projector``: run one projector worker of the consumer group."""

from __future__ import annotations

import argparse
import os
import sys

import faust

from tuneplane.common.settings import SettingsError, positive_int, require
from tuneplane.projector.app import ProjectorSettings, create_app


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="tuneplane-projector",
        description="Consume the batches topic and project it into PostgreSQL. Start several "
                    "to scale out; they share the partitions of the consumer group. Reads "
                    "TUNEPLANE_DATABASE_URL and TUNEPLANE_KAFKA_BOOTSTRAP.")
    parser.add_argument("--loglevel", default="info", help="faust worker log level")
    args = parser.parse_args(argv)
    try:
        settings = ProjectorSettings(
            database_url=require(os.environ, "TUNEPLANE_DATABASE_URL"),
            kafka_bootstrap=require(os.environ, "TUNEPLANE_KAFKA_BOOTSTRAP"),
            pool_size=positive_int(os.environ, "TUNEPLANE_PROJECTOR_DB_POOL", 4),
        )
    except SettingsError as exc:
        print(f"tuneplane-projector: {exc}", file=sys.stderr)
        return 2
    app = create_app(settings)
    worker = faust.Worker(app, loglevel=args.loglevel)
    worker.execute_from_commandline()  # returns only when the worker stops
    return 0


if __name__ == "__main__":
    sys.exit(main())
