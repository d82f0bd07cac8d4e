"""``tuneplane-destinations``: the TelemetryDestination controller and its admission
webhook, run in the release's namespace with a service account that may read the custom
resources and write their status, and apply the collector's ConfigMap and Deployment.

It composes the OpenTelemetry Collector from the release's TelemetryDestinations (those
labelled ``tuneplane.dev/release: <TUNEPLANE_DESTINATIONS_RELEASE>``; the same code as the
API resource), runs no collector pod while there is none, mounts each sink's Secret under
the secrets root, and says in each resource's status whether it is exported. Its webhook
refuses, before storage, what ``tuneplane destinations apply`` refuses, and a sink naming
a Secret not made for sinks (``TUNEPLANE_SINK_SECRET_PREFIX``).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
from typing import Any

from tuneplane.contract import flags
from tuneplane.contract.settings import SettingsError
from tuneplane.exporter.kube import scope, webhook
from tuneplane.exporter.kube.controller import Controller
from tuneplane.exporter.kube.resources import Kubernetes
from tuneplane.exporter.kube.settings import ControllerSettings

log = logging.getLogger("tuneplane.destinations")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tuneplane-destinations", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    flags.add_to(p, ControllerSettings)
    p.add_argument("--loglevel", default="INFO")
    return p


async def serve(settings: ControllerSettings) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    kubernetes = await Kubernetes.connect()
    selector = scope.selector(settings.release)

    async def others() -> list[dict[str, Any]]:
        return await kubernetes.destinations(selector)

    judged = webhook.Scope(settings.release, settings.sink_secret_prefix, settings.secrets_root)
    runner = await webhook.serve(webhook.application(others, judged), settings.webhook_port,
                                 str(settings.webhook_cert), str(settings.webhook_key))
    log.info("admission webhook on :%d%s; composing %s", settings.webhook_port,
             webhook.PATH, settings.otelcol_name)
    try:
        await Controller(settings, kubernetes).run(stop)
    finally:
        await runner.cleanup()


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    logging.basicConfig(level=args.loglevel.upper(),
                        format="%(asctime)s %(levelname)s %(name)s %(message)s")
    try:
        settings = flags.settings(ControllerSettings, os.environ, args)
        asyncio.run(serve(settings))
    except (SettingsError, OSError) as exc:
        print(f"tuneplane-destinations: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
