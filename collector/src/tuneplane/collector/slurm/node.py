"""``tuneplane-collector slurm-node``: the collector of one node of a Slurm job.

Run by the job script on every node, from the artifact verified there, before any training
task starts. It makes itself undumpable, reads the job's ticket from its standard input,
refuses a spool root on a shared filesystem (telling control, which spends the ticket for
this node and start), redeems the ticket, and says ``ready`` with the attempt. It then
reads the sources its node's members own (task i is ``rank-i``; relative paths below the
tasks' working directory) into one private spool each and sends them with tokens held in
memory only, renewed while the job runs. SIGTERM (training ended, or Slurm ends the job)
waits for the job's training tasks on the node to end (``tasks``), then reads the sources
to their end and drains for the drain time; what stayed spooled is reported to control and
printed.
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import socket
import sys
import threading
from functools import partial
from pathlib import Path

from tuneplane.collector import integration, spoolroot
from tuneplane.collector.collector import Collector, CollectorConfig
from tuneplane.collector.fence import Fence, open_plainly
from tuneplane.collector.node.client import write_private
from tuneplane.collector.sender import Target
from tuneplane.collector.settings import CollectorSettings
from tuneplane.collector.slurm import secrecy, tasks
from tuneplane.collector.slurm.control import Credentials, JobControl, JobRefused, job_start
from tuneplane.contract.slurmlines import READY, REFUSED
from tuneplane.node.v1 import slurm_pb2 as spb
from tuneplane.telemetry.v1.identity import MemberKey
from tuneplane.telemetry.v1.limits import MAX_BATCH_BYTES

log = logging.getLogger("tuneplane.collector.slurm")


def refused(reason: str) -> int:
    print(REFUSED + reason, flush=True)
    return 2


def cmd_slurm_node(args: argparse.Namespace, settings: CollectorSettings) -> int:
    secrecy.undumpable()  # first: nothing secret is read before
    logging.basicConfig(level=args.loglevel.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s %(message)s")
    ticket = sys.stdin.readline().strip()
    ca_pem = settings.slurm_control_ca.encode()
    host = socket.gethostname()
    try:
        start = job_start(ticket, settings)
    except JobRefused as exc:
        return refused(f"{host}: {exc}")
    control = JobControl(args.control, ca_pem, args.server_name)
    try:
        return run(args, settings, control, start)
    except (JobRefused, spoolroot.SpoolPlaceError, integration.IntegrationError,
            OSError) as exc:
        return refused(f"{host}: {exc}")
    finally:
        control.close()


def run(args: argparse.Namespace, settings: CollectorSettings, control: JobControl,
        start: spb.JobStart) -> int:
    root: Path = args.spool_root
    collectors: list[Collector] = []
    ending, stopping = threading.Event(), threading.Event()

    def end_after_the_tasks() -> None:
        """Once told to end, and once the job's tasks here have ended (``tasks``), stop
        the collectors: each reads to the end and drains. From the start: a SIGTERM before
        the collectors start stops each as it starts."""
        ending.wait()
        left: list[int] = []
        try:  # the scan in a thread of its own: a hung /proc read must not keep the drain
            scan = threading.Thread(target=lambda: left.extend(tasks.wait_until_ended(
                start.job_id)), name="tasks", daemon=True)
            scan.start()
            scan.join(tasks.TASKS_GRACE + 1.0)
            if left or scan.is_alive():
                log.warning("training tasks %s still run %.0f s after the job's end began; "
                            "reading to the end of the sources regardless", left or "(?)",
                            tasks.TASKS_GRACE)
        finally:
            stopping.set()
            for collector in list(collectors):
                collector.stop()

    signal.signal(signal.SIGTERM, lambda *_: ending.set())
    signal.signal(signal.SIGINT, lambda *_: ending.set())
    threading.Thread(target=end_after_the_tasks, name="ender", daemon=True).start()
    try:
        mount_table = settings.mount_table.read_text()
        spoolroot.check_filesystem(root, mount_table, hint=(
            "Launch with --spool-root on a node-local directory such as /tmp or the "
            "node's scratch disk (no other is tried)"))
        spoolroot.make_private(root, "spool root")
    except (spoolroot.SpoolPlaceError, OSError) as exc:
        reason = f"{start.hostname}: spool root refused: {exc}"
        try:
            control.refuse(start, reason)
        except JobRefused as refusal:
            log.error("the refusal did not reach control: %s", refusal)
        return refused(reason)
    granted = control.redeem(start)
    credentials = Credentials(granted.credentials)
    config = granted.collector
    workdir: Path = args.workdir
    if not args.workdir_given:
        spoolroot.make_private(workdir, "working directory")
    owners = integration.parse(json.loads(config.integration_json), "the run's artifact")
    place = spoolroot.member_dir(root, MemberKey(granted.run_id, granted.attempt,
                                                 credentials.members[0])).parent
    spoolroot.make_private(place)
    ca_file = place / "telemetry-ca.pem"
    write_private(ca_file, config.trust_bundle_pem)
    for member in credentials.members:
        sources = owners.sources_of(member, workdir)
        if not sources:
            log.info("%s owns nothing to read", member)
            continue
        owner = MemberKey(granted.run_id, granted.attempt, member)
        collectors.append(Collector(CollectorConfig(
            owner=owner, spool_dir=spoolroot.grant(root, owner, mount_table),
            target=Target(config.telemetry_target, ca_file, None,
                          config.server_name or None, partial(credentials.token, member)),
            sources=sources, max_batch_points=10_000, max_batch_bytes=MAX_BATCH_BYTES * 3 // 4,
            spool_bytes=config.spool_bytes or settings.spool_bytes,
            drain_seconds=config.drain_seconds or settings.drain_seconds,
            fence=Fence.of([root], open_plainly))))
        if stopping.is_set():
            collectors[-1].stop()
    print(f"{READY} attempt={granted.attempt} node={start.node_index} "
          f"members={','.join(credentials.members)}", flush=True)
    return follow(collectors, credentials, control, start, stopping)


def follow(collectors: list[Collector], credentials: Credentials, control: JobControl,
           start: spb.JobStart, stopping: threading.Event) -> int:
    """Run the collectors until SIGTERM (``stopping``), let them drain, and report what
    stayed spooled."""
    renewing = threading.Thread(target=credentials.keep_fresh, args=(control, stopping),
                                name="renewal", daemon=True)
    renewing.start()
    left: dict[str, int] = {}
    threads = [threading.Thread(target=lambda c=c: left.__setitem__(
        c.config.owner.member, c.run()), name=f"collector-{c.config.owner.member}")
        for c in collectors]
    for thread in threads:
        thread.start()
    while not stopping.is_set() and any(t.is_alive() for t in threads):
        stopping.wait(0.5)
    for thread in threads:
        thread.join()
    for collector in collectors:
        collector.close()
    undelivered = sum(left.values())
    detail = ", ".join(f"{m}: {n}" for m, n in sorted(left.items()) if n)
    print(f"tuneplane-collector: node {start.node_index} drained; {undelivered} batches left "
          f"in the spool{f' ({detail})' if detail else ''}", flush=True)
    try:
        control.report(credentials.credential, left, detail)
    except JobRefused as exc:
        log.error("the drain's end was not reported: %s", exc)
    stopping.set()
    return 0 if undelivered == 0 else 3
