"""The collector process: a reader thread fills the spool, a sender thread drains it."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import grpc

from tuneplane.collector.fence import OPEN, Fence
from tuneplane.collector.reader import SourceReader, SourceSpec
from tuneplane.collector.sender import Sender, Target, TransientSendError
from tuneplane.collector.spool import Spool
from tuneplane.collector.watch import Wakeups, wakeups
from tuneplane.telemetry.v1.identity import MemberKey

log = logging.getLogger("tuneplane.collector")


@dataclass(frozen=True, slots=True)
class CollectorConfig:
    owner: MemberKey
    spool_dir: Path
    target: Target
    sources: list[SourceSpec]
    max_batch_points: int
    max_batch_bytes: int
    spool_bytes: int = 256 * 1024 * 1024
    drain_seconds: float = 30.0
    in_flight: int = 4
    poll_seconds: float = 0.5  # sources are read at most this often while they grow
    #: With inotify, an unchanged source is looked at again after this long all the same.
    idle_seconds: float = 30.0
    fence: Fence = OPEN  # directories no source is read from (the node agent's state)
    interceptors: list[grpc.UnaryUnaryClientInterceptor] = field(default_factory=list)


class Collector:
    def __init__(self, config: CollectorConfig, clock: Callable[[], float] = time.time,
                 follow: Wakeups | None = None) -> None:
        self.config = config
        self.stopping = threading.Event()   # stop reading; drain
        self.sources_idle = threading.Event()
        #: What wakes the reader: inotify where it can be had, else a timer.
        self.wakeups = follow if follow is not None else wakeups(sleep=self.stopping.wait)
        self.reader = SourceReader(Spool(config.spool_dir, config.owner), config.sources,
                                   max_points=config.max_batch_points,
                                   max_bytes=config.max_batch_bytes,
                                   spool_bytes=config.spool_bytes, clock=clock,
                                   fence=config.fence, wakeups=self.wakeups)
        # One SQLite connection per thread: reader, sender, and this (status) thread.
        self.sender = Sender(Spool(config.spool_dir, config.owner), config.target,
                             in_flight=config.in_flight, interceptors=config.interceptors)
        self._status = Spool(config.spool_dir, config.owner)

    def read_loop(self) -> None:
        while not self.stopping.is_set():
            started = time.monotonic()
            if self.reader.run_once():
                self.sources_idle.set()
                self.wait_for_change(started)
            else:
                self.sources_idle.clear()
                if self.reader.spool_full():
                    self.stopping.wait(self.config.poll_seconds)
        # Stopping (the attempt ended): take what the sources hold now, as far as the spool
        # and the drain time allow, so the last steps written are not left unread.
        deadline = time.monotonic() + self.config.drain_seconds
        while time.monotonic() < deadline and not self.reader.spool_full():
            if self.reader.run_once():
                break

    def wait_for_change(self, started: float) -> None:
        """Until a source may have changed (or ``idle_seconds`` passed), then until
        ``poll_seconds`` after the pass that ``started``: a file written in small pieces is
        read in batches, not once per write."""
        deadline = started + self.config.idle_seconds
        while not self.stopping.is_set() and (left := deadline - time.monotonic()) > 0:
            if self.wakeups.wait(min(self.config.poll_seconds, left)):
                break
        self.stopping.wait(max(0.0, started + self.config.poll_seconds - time.monotonic()))

    def send_loop(self, until: threading.Event) -> None:
        while not until.is_set():
            try:
                if self.sender.run_once(give_up_after=5.0, stop=until.is_set) == 0:
                    until.wait(0.05)
            except TransientSendError as exc:
                log.warning("ingest unreachable, batches stay spooled: %s", exc)

    def idle(self) -> bool:
        return self.sources_idle.is_set() and self._status.pending_count() == 0

    def run(self, *, exit_when_idle: bool = False) -> int:
        """Runs until ``stop()`` (or idle, if asked), reads the sources to their current end,
        then drains.

        Returns the batches not delivered: still pending after the drain, or quarantined.
        """
        send_stop = threading.Event()
        reader = threading.Thread(target=self.read_loop, name="reader", daemon=True)
        sender = threading.Thread(target=self.send_loop, args=(send_stop,), name="sender",
                                  daemon=True)
        reader.start()
        sender.start()
        while not self.stopping.is_set():
            if exit_when_idle and self.idle():
                self.stopping.set()
                break
            self.stopping.wait(0.1)
        deadline = time.monotonic() + self.config.drain_seconds
        reader.join()
        while self._status.pending_count() and time.monotonic() < deadline:
            time.sleep(0.05)
        send_stop.set()
        sender.join(timeout=10)
        left = self._status.pending_count()
        if left:
            log.warning("drain ended with %d batches left in the spool %s", left,
                        self.config.spool_dir)
        for sequence, reason in self._status.quarantined():
            log.error("batch %d is quarantined in the spool %s: %s", sequence,
                      self.config.spool_dir, reason)
        return left + len(self._status.quarantined())

    def stop(self) -> None:
        self.stopping.set()

    def close(self) -> None:
        self.sender.close()
        self.reader.close()
        self.wakeups.close()
        self._status.close()
