"""What an OpenTelemetry Collector's ``file`` exporter wrote: its JSON lines of OTLP
metrics, point by point (the exporter tests and the cluster's receiver read them)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any


def gauge_points(text: str) -> Iterator[tuple[str, dict[str, Any], int, float]]:
    """(metric name, the point's attributes, its time in ns, its value) of every gauge
    point in ``text``."""
    for line in text.splitlines():
        for rm in json.loads(line)["resourceMetrics"]:
            for sm in rm["scopeMetrics"]:
                for metric in sm["metrics"]:
                    for point in metric["gauge"]["dataPoints"]:
                        attributes = {a["key"]: next(iter(a["value"].values()))
                                      for a in point["attributes"]}
                        yield (metric["name"], attributes, int(point["timeUnixNano"]),
                               point["asDouble"])
