"""Named crash points for fault tests.

``TUNEPLANE_COLLECTOR_FAILPOINTS="seal=3"`` makes the collector SIGKILL itself the third
time it passes ``seal`` (several as ``read=2,ack=5``). The points are the steps a batch
goes through:

    read    records decoded, not yet sealed
    seal    batch and the source position it advances committed to the spool
    send    batch on the wire, reply not yet read
    ack     ingest's reply read (Kafka holds the batch), batch not yet deleted
    delete  batch deleted from the spool

``tuneplane-collector run`` arms them from its settings. Unarmed, as always outside tests,
passing a point costs one truth test.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Mapping

POINTS = ("read", "seal", "send", "ack", "delete")
_lock = threading.Lock()
_armed: dict[str, int] = {}


def parse(text: str) -> dict[str, int]:
    armed: dict[str, int] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, count = item.partition("=")
        if name not in POINTS or not sep or not count.isdigit() or int(count) < 1:
            raise ValueError(f"has {item!r}, which is not POINT=N with POINT one of "
                             f"{', '.join(POINTS)} and N >= 1")
        armed[name] = int(count)
    return armed


def arm(points: Mapping[str, int]) -> None:
    with _lock:
        _armed.clear()
        _armed.update(points)


def reach(point: str) -> None:
    if not _armed:
        return
    with _lock:
        left = _armed.get(point)
        if left is None:
            return
        _armed[point] = left - 1
    if left == 1:
        os.kill(os.getpid(), signal.SIGKILL)
