"""A pass of the data lifecycle (retention, the purge, the archive) repeated where no
scheduler runs it, as in compose: ``--every SECONDS`` runs it at once and then every so
often; a pass that fails is logged and the next one comes within a minute; ``--heartbeat
PATH`` is written after each pass that succeeded, for a health check (``python -m
tuneplane.common.schedule PATH``) to judge. Without ``--every``: one pass, its exit code.

Each pass must be safe to run beside another replica's (they all are): no lock is taken
here, and a pass longer than ``--every`` only delays the next.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

log = logging.getLogger("tuneplane.schedule")

#: After a failed pass the next comes this soon (or after ``--every``, when sooner).
RETRY_AFTER = 60.0


def seconds(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"a number of seconds above 0, not {text}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--every", type=seconds, metavar="SECONDS",
                        help="run a pass now and then every SECONDS, for good (a failed pass "
                             "is logged and the next one tried); default: one pass")
    parser.add_argument("--heartbeat", type=Path, metavar="PATH",
                        help="with --every: write PATH after each pass that succeeded (a "
                             "health check: python -m tuneplane.common.schedule PATH)")


async def repeat(args: argparse.Namespace, one_pass: Callable[[], Awaitable[int]],
                 fatal: tuple[type[Exception], ...] = ()) -> int:
    """``one_pass()`` once (its exit code), or for good with ``args.every``; a ``fatal``
    failure (a setting wrong: no later pass would do better) ends it."""
    every: float | None = args.every
    if every is None:
        return await one_pass()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    while True:
        started = time.monotonic()
        try:
            code = await one_pass()
        except fatal:
            raise
        except Exception:  # the next pass may well succeed (a store back, a lock let go)
            log.exception("the pass failed; the next in %g s", min(every, RETRY_AFTER))
            code = 1
        sys.stdout.flush()
        if code == 0 and args.heartbeat is not None:
            args.heartbeat.write_text(f"{every:g}\n")  # what a health check judges by
        period = every if code == 0 else min(every, RETRY_AFTER)
        await asyncio.sleep(max(0.0, period - (time.monotonic() - started)))


#: A pass may take this long beyond its period before the schedule counts as unhealthy.
SLACK = 300.0


def healthy(heartbeat: Path, now: float | None = None) -> bool:
    """Whether a pass succeeded within the last two periods (the heartbeat file holds the
    period) and some slack: one failed pass is not unhealthy, two in a row are."""
    try:
        touched, every = heartbeat.stat().st_mtime, float(heartbeat.read_text())
    except (FileNotFoundError, ValueError):
        return False
    return (time.time() if now is None else now) - touched <= 2 * every + SLACK


def main(argv: list[str] | None = None) -> int:
    """``python -m tuneplane.common.schedule HEARTBEAT``: exit 0 when the schedule writing
    HEARTBEAT had a pass succeed within its last two periods, 1 otherwise (a container
    health check)."""
    parser = argparse.ArgumentParser(prog="python -m tuneplane.common.schedule",
                                     description=main.__doc__)
    parser.add_argument("heartbeat", type=Path)
    args = parser.parse_args(argv)
    return 0 if healthy(args.heartbeat) else 1


if __name__ == "__main__":
    sys.exit(main())
