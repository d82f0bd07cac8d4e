"""``tuneplane-exporter``: curves to the fleet's TelemetryDestinations.

Watches the destinations in PostgreSQL, writes the composed OpenTelemetry Collector
configuration (and runs the collector on it with ``--otelcol``), and while at least one
destination exists consumes the batches topic in its own consumer group, sending curves
as OTLP metrics to the collector. With none, no export work is done at all.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import logging
import os
import signal
import sys
from pathlib import Path

from tuneplane.common.kafka.poison import DeadLetterLimit
from tuneplane.contract.settings import SettingsError
from tuneplane.controlplane.destinations.resource import SECRETS_ROOT
from tuneplane.exporter.service import Exporter
from tuneplane.exporter.settings import GROUP, ExporterSettings

#: Flags that, when given, replace the setting of the same name.
FLAGS = ("config_path", "otelcol", "otlp_endpoint", "secrets_root", "group", "poll_seconds")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tuneplane-exporter", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config-path", type=Path,
                   help="where the composed collector configuration is written (default "
                        "TUNEPLANE_EXPORTER_CONFIG or /var/lib/tuneplane/otelcol.yaml)")
    p.add_argument("--otelcol", type=Path,
                   help="an OpenTelemetry Collector binary to run on the composed "
                        "configuration (default TUNEPLANE_OTELCOL; without it the deployment "
                        "runs the collector)")
    p.add_argument("--otlp-endpoint",
                   help="the composed collector's OTLP gRPC receiver (default 127.0.0.1:4317)")
    p.add_argument("--secrets-root",
                   help=f"where each sink's secret keys are mounted, one directory per sink "
                        f"(default TUNEPLANE_TELEMETRY_SECRETS_ROOT or {SECRETS_ROOT})")
    p.add_argument("--group", help=f"consumer group (default {GROUP})")
    p.add_argument("--poll-seconds", type=float,
                   help="how often destinations are checked (default 2)")
    p.add_argument("--loglevel", default="INFO")
    return p


async def serve(settings: ExporterSettings) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    logging.getLogger("tuneplane.exporter").info("exporter watching destinations")
    # Handed on to the collector's process, which keeps only collector.PASSED of it.
    await Exporter(settings, {**os.environ}).run(stop)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    logging.basicConfig(level=args.loglevel.upper(),
                        format="%(asctime)s %(levelname)s %(name)s %(message)s")
    try:
        flags = {name: getattr(args, name) for name in FLAGS if getattr(args, name) is not None}
        settings = dataclasses.replace(ExporterSettings.from_environ(os.environ), **flags)
        asyncio.run(serve(settings))
    except DeadLetterLimit as exc:
        logging.getLogger("tuneplane.exporter").critical(
            "%s; stopping with nothing of this group committed", exc)
        return 70
    except (SettingsError, OSError) as exc:
        print(f"tuneplane-exporter: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
