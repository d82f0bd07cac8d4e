"""``tuneplane-exporter``: curves to the fleet's TelemetryDestinations.

Watches the destinations in PostgreSQL, writes the composed OpenTelemetry Collector
configuration (and runs the collector on it with ``--otelcol``), and while at least one
destination exists consumes the batches topic in its own consumer group, sending curves
as OTLP metrics to the collector. With none, no export work is done at all.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys

from tuneplane.common.kafka.poison import DeadLetterLimit
from tuneplane.common.metrics import exposition
from tuneplane.contract import flags
from tuneplane.contract.settings import SettingsError
from tuneplane.exporter.service import Exporter
from tuneplane.exporter.settings import ExporterSettings


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tuneplane-exporter", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    flags.add_to(p, ExporterSettings)
    p.add_argument("--loglevel", default="INFO")
    return p


async def serve(settings: ExporterSettings) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    exposition.serve(settings.metrics_port, settings.metrics_host)
    logging.getLogger("tuneplane.exporter").info("exporter watching destinations")
    # Handed on to the collector's process, which keeps only collector.PASSED of it.
    await Exporter(settings, {**os.environ}).run(stop)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    logging.basicConfig(level=args.loglevel.upper(),
                        format="%(asctime)s %(levelname)s %(name)s %(message)s")
    try:
        settings = flags.settings(ExporterSettings, os.environ, args)
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
