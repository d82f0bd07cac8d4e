"""One launch on this node: once it holds a run-as user of its own (``pool``; it waits for
one, reported waiting) and is prepared (``prepare``: checked, granted, written), run the
training command as that user with a collector beside it, keep the collector's token fresh,
let the collector drain, end what the launch left running and give the user back.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import stat
import subprocess
import threading
import time
from pathlib import Path

from tuneplane.collector import spool
from tuneplane.collector.node import processes, reports
from tuneplane.collector.node.client import ControlClient, write_private
from tuneplane.collector.node.host import Host
from tuneplane.collector.node.prepare import Prepared, Refused, prepare, wanted_user
from tuneplane.collector.node.runas import RunAs
from tuneplane.node.v1 import node_pb2 as pb

log = logging.getLogger("tuneplane.node")
State = pb.LaunchReport.State


class LaunchRunner:
    """Runs one launch to its end on a thread of the agent; reports every state change."""

    def __init__(self, launch: pb.Launch, client: ControlClient, launch_dir: Path,
                 host: Host, stopping: threading.Event) -> None:
        self.launch = launch
        self._client = client
        self._dir = launch_dir
        self._host = host
        self._stopping = stopping
        self._token = launch.token
        self._token_received = time.time()
        self.renewals = 0

    def _report(self, state: State.ValueType, *, exit_code: int = 0, detail: str = "",
                undelivered: int = 0, give_up_after: float = 60.0) -> None:
        reports.send(self._client, self._dir, pb.LaunchReport(
            launch_id=self.launch.launch_id, state=state, exit_code=exit_code, detail=detail,
            undelivered_batches=undelivered), give_up_after=give_up_after)

    def _claim(self) -> None:
        """The launch's directory: once it exists, an agent restarted never starts the
        launch again (so it is made only when something of the launch may start)."""
        self._dir.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._dir.mkdir(mode=0o700)

    def _env(self) -> dict[str, str]:
        """The collector's: the agent's environment (it is the agent's user) and settings."""
        config = self.launch.collector
        return {**os.environ, "TUNEPLANE_TELEMETRY_SPOOL_BYTES": str(config.spool_bytes),
                "TUNEPLANE_TELEMETRY_DRAIN_SECONDS": str(config.drain_seconds)}

    def _start_collector(self, prepared: Prepared) -> subprocess.Popen[bytes]:
        log_file = prepared.directory / "collector.log"
        fd = os.open(log_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
        try:
            return subprocess.Popen(prepared.collector, cwd=prepared.directory,
                                    stdin=subprocess.DEVNULL, stdout=fd,
                                    stderr=subprocess.STDOUT, env=self._env())
        finally:
            os.close(fd)

    def _renew_if_due(self) -> None:
        lifetime = self._token.expires_at - self._token_received
        if time.time() < self._token_received + lifetime / 2:
            return
        try:
            fresh = self._client.renew(self.launch.launch_id)
        except Exception as exc:  # control unreachable: the current token still serves
            log.warning("launch %d: workload token renewal failed, retrying: %s",
                        self.launch.launch_id, exc)
            self._token_received = time.time() - lifetime / 2 + 2.0
            return
        write_private(self._dir / "token", fresh.token)
        self._token, self._token_received = fresh, time.time()
        self.renewals += 1
        log.info("launch %d: workload token renewed (until %d)", self.launch.launch_id,
                 fresh.expires_at)

    def run(self) -> None:
        """Wait for a run-as user, run the launch as it, then give the user back."""
        try:
            wanted = wanted_user(self.launch, self._host.users.users)
        except Refused as exc:
            self._claim()
            self._report(State.STATE_REFUSED, detail=str(exc))
            return
        run_as = self._wait_for_user(wanted)
        if run_as is None:
            log.info("launch %d: not started, the agent stops first; control delivers it "
                     "again", self.launch.launch_id)
            return
        try:
            self._claim()
            self._renew_if_due()  # one that waited long may hold a token near its end
            self.launch.token.CopyFrom(self._token)
            self._run_as(run_as)
        finally:
            self._give_back(run_as)

    def _wait_for_user(self, wanted: RunAs | None) -> RunAs | None:
        users, launch_id = self._host.users, self.launch.launch_id
        try:
            run_as = users.take(launch_id, wanted)
            if run_as is None:
                reason = users.reason(launch_id)
                log.info("launch %d: %s", launch_id, reason)
                self._report(State.STATE_WAITING, detail=reason, give_up_after=10.0)
                run_as = users.wait(launch_id, self._stopping)
        finally:
            users.leave(launch_id)
        if run_as is not None:
            log.info("launch %d: runs as %s", launch_id, run_as.name)
        return run_as

    def _give_back(self, run_as: RunAs) -> None:
        """The user goes back to the pool once nothing of the launch runs as it, and the
        working directory the agent made for it is the agent's again: the next launch
        given the user enters neither."""
        users = self._host.users
        try:
            if users.exclusive(run_as):
                left = processes.end_all(run_as)
                if left:  # the pool gives a user still running processes to no launch
                    log.error("launch %d: processes %s of %s outlived it; %s runs no launch "
                              "until they have exited", self.launch.launch_id, left,
                              run_as.name, run_as.name)
                if not self.launch.working_directory:
                    hand_back(self._host.work_root / str(self.launch.launch_id), run_as)
        finally:
            users.release(self.launch.launch_id)

    def _run_as(self, run_as: RunAs) -> None:
        """Prepare, then run training as ``run_as`` and its collector to the end."""
        try:
            prepared = prepare(self.launch, self._dir, self._host, run_as)
        except Refused as exc:
            self._report(State.STATE_REFUSED, detail=str(exc))
            return
        collector = self._start_collector(prepared)
        env = run_as.environment(prepared.workdir, dict(self.launch.environment), {
            "TUNEPLANE_RUN_ID": self.launch.run_id, "TUNEPLANE_ATTEMPT": str(self.launch.attempt),
            "TUNEPLANE_MEMBER": self.launch.member, "TUNEPLANE_PROJECT": self.launch.project})
        try:
            training = run_as.start(list(self.launch.command), prepared.workdir, env,
                                    prepared.directory / "training.log")
        except (OSError, ValueError) as exc:  # ValueError: a NUL or '=' in its environment
            training_error = f"training command could not start: {exc}"
            self._finish(collector, prepared, State.STATE_FAILED, 127, training_error)
            return
        self._report(State.STATE_RUNNING)
        terminated = False
        pause, started = 0.0, time.monotonic()  # one that keeps exiting is not restarted hot
        while training.poll() is None:
            self._renew_if_due()
            now = time.monotonic()
            if collector.poll() is not None and now >= started + pause:
                pause = 0.0 if now - started > 60 else min(max(pause * 2, 1.0), 30.0)
                log.warning("launch %d: collector exited (%s) while training runs; restarting "
                            "it (the spool resumes where it was)%s", self.launch.launch_id,
                            collector.returncode,
                            f"; if it exits again, in {pause:.0f} s" if pause else "")
                collector, started = self._start_collector(prepared), now
            if self._stopping.is_set() and not terminated:
                signal_group(training.pid, signal.SIGTERM)
                terminated = True
            time.sleep(0.25)
        signal_group(training.pid, signal.SIGKILL)  # what it left running ends with it
        code = training.returncode
        state = State.STATE_FINISHED if code == 0 else State.STATE_FAILED
        self._finish(collector, prepared, state, code,
                     "" if code == 0 else f"training command exited with {code}")

    def _finish(self, collector: subprocess.Popen[bytes], prepared: Prepared,
                state: State.ValueType, code: int, detail: str) -> None:
        """Let the collector read to the end and drain, then report how it all ended."""
        collector.send_signal(signal.SIGTERM)
        drain = self.launch.collector.drain_seconds
        deadline = time.time() + drain + 60
        while collector.poll() is None and time.time() < deadline:
            self._renew_if_due()
            time.sleep(0.25)
        if collector.poll() is None:
            collector.kill()
            collector.wait()
        undelivered = undelivered_batches(prepared.spool)
        if undelivered:
            detail = (detail + "; " if detail else "") + (
                f"{undelivered} batches left in the spool {prepared.spool}")
        self._report(state, exit_code=code, detail=detail, undelivered=undelivered)


def undelivered_batches(spool_dir: Path) -> int:
    try:
        held = spool.status(spool_dir)
    except spool.SpoolNotReady:
        return 0  # the collector never spooled anything
    except spool.SpoolError as exc:
        log.error("cannot tell what the spool holds: %s", exc)
        return 0
    pending = held["pending"]
    quarantined = held["quarantined"]
    assert isinstance(pending, dict)
    assert isinstance(quarantined, list)
    return int(pending["batches"]) + len(quarantined)


def hand_back(workdir: Path, run_as: RunAs) -> None:
    """A working directory the agent made for ``run_as`` becomes the agent's (still 0700)."""
    with contextlib.suppress(FileNotFoundError):
        info = os.lstat(workdir)
        if stat.S_ISDIR(info.st_mode) and info.st_uid == run_as.uid:
            os.chown(workdir, os.geteuid(), os.getegid(), follow_symlinks=False)


def signal_group(leader: int, signum: int) -> None:
    """Signal the training command's session (its own process group) if anything is left."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(leader, signum)
