"""The node agent loop: beat, take new launches, run each on its own thread."""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

import grpc

from tuneplane.collector.node import reports
from tuneplane.collector.node.client import ControlClient, NodeState
from tuneplane.collector.node.host import Host
from tuneplane.collector.node.launch import LaunchRunner
from tuneplane.node.v1 import node_pb2 as pb

log = logging.getLogger("tuneplane.node")


class Agent:
    def __init__(self, host: Host, client: ControlClient) -> None:
        self._host = host
        self._state_dir = host.state_dir
        self._client = client
        self.stopping = threading.Event()
        self.runners: dict[int, threading.Thread] = {}

    def _launch_dir(self, launch_id: int) -> Path:
        return self._state_dir / "launches" / str(launch_id)

    def _take(self, launch: pb.Launch) -> None:
        if launch.launch_id in self.runners:
            return  # delivered again before our RUNNING report landed
        directory = self._launch_dir(launch.launch_id)
        if directory.exists():
            if (directory / reports.PENDING).exists():
                return  # it ended; its final report is on its way (resend_pending)
            # Taken by an earlier life of this agent that died before reporting it started
            # (the runner makes the directory once it has a user): its processes may still
            # run, so it is never started twice.
            reports.send(self._client, directory, pb.LaunchReport(
                launch_id=launch.launch_id, state=pb.LaunchReport.STATE_FAILED, exit_code=-1,
                detail="the node agent restarted before the launch was reported running; "
                       f"not started twice (see {directory})"), give_up_after=30.0)
            return
        runner = LaunchRunner(launch, self._client, directory, self._host, self.stopping)
        thread = threading.Thread(target=runner.run, name=f"launch-{launch.launch_id}")
        self.runners[launch.launch_id] = thread
        log.info("launch %d: %s attempt %d member %s: %s", launch.launch_id, launch.run_id,
                 launch.attempt, launch.member, " ".join(launch.command))
        thread.start()

    def running(self) -> list[int]:
        return [i for i, t in self.runners.items() if t.is_alive()]

    def beat(self) -> float:
        """One heartbeat; returns the seconds until the next."""
        try:
            reply = self._client.heartbeat(self.running())
        except grpc.RpcError as exc:
            level = logging.ERROR if exc.code() == grpc.StatusCode.UNAUTHENTICATED else \
                logging.WARNING
            log.log(level, "heartbeat failed: %s: %s", exc.code().name, exc.details())
            return 5.0
        if reply.renewed_node_token:
            self._client.state.token = reply.renewed_node_token
            self._client.state.save(self._state_dir)
            log.info("node token renewed")
        for launch in reply.launches:
            self._take(launch)
        reports.resend_pending(self._client, self._state_dir / "launches", set(self.running()))
        return float(reply.next_heartbeat_seconds or 5)

    def run(self, *, exit_after: int | None = None) -> None:
        """Until stopped (or ``exit_after`` launches have ended); then end what runs."""
        def done() -> bool:
            return exit_after is not None and len(self.runners) >= exit_after \
                and not self.running()

        while not self.stopping.is_set() and not done():
            next_beat = time.monotonic() + self.beat()
            while time.monotonic() < next_beat and not self.stopping.is_set() and not done():
                self.stopping.wait(0.25)
        self.stopping.set()  # training commands get SIGTERM; collectors drain
        for thread in self.runners.values():
            thread.join()


def load(host: Host) -> Agent:
    return Agent(host, ControlClient(NodeState.load(host.state_dir)))

