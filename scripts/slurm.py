"""A local single-node Slurm cluster for tests and development, from Debian's packages
(``slurm-wlm``, ``munge``): munged with a key of its own, slurmctld and slurmd in the
background, two nodes (``tuneplane-node`` and ``tuneplane-node-2``: two slurmd on this host,
two CPUs each) in two partitions: ``debug``, the default, and ``urgent``, whose jobs preempt
(requeue) those of ``debug``.
Everything lives below ``.slurm/`` of the checkout (``TUNEPLANE_SLURM_DIR``).

    scripts/slurm up       start it (installing the packages when absent; needs root)
    scripts/slurm env      print `export SLURM_CONF=...` for sbatch, srun, squeue, scancel
    scripts/slurm status   whether each daemon runs, and the node's state
    scripts/slurm down     stop it (--wipe: also delete .slurm/)

``eval "$(scripts/slurm up)"`` starts it and sets ``SLURM_CONF`` in the shell.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

from scripts.lib.exports import export_lines
from scripts.lib.ports import free_port
from scripts.lib.processes import PidFile, ProcessError, status_line, stop, wait_until

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("TUNEPLANE_SLURM_DIR", ROOT / ".slurm"))
NODES = ("tuneplane-node", "tuneplane-node-2")
#: Each node's CPUs as Slurm counts them (``config_overrides``: whatever this host has), so a
#: job of two tasks fits one node and a two-node job runs on a two-core host.
NODE_CPUS = 2
DAEMONS = ("munged", "slurmctld", *(f"slurmd-{node}" for node in NODES))


class SlurmError(ProcessError):
    """The cluster could not be set up or started; the message says why."""


def log(message: str) -> None:
    print(f"slurm: {message}", file=sys.stderr, flush=True)


def install() -> None:
    if all(shutil.which(p) for p in ("slurmctld", "slurmd", "munged", "sbatch")):
        return
    log("installing Debian's slurm-wlm and munge")
    done = subprocess.run(["sh", "-c", "apt-get update -q && DEBIAN_FRONTEND=noninteractive "
                           "apt-get install -y -q slurm-wlm munge"],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SlurmError(f"could not install slurm-wlm and munge (needs root): "
                         f"{done.stderr.strip()[-500:]}")


def config(ctld_port: int, slurmd_ports: list[int]) -> str:
    d = DATA
    return "\n".join([
        "ClusterName=tuneplane",
        "SlurmctldHost=localhost(127.0.0.1)",
        f"SlurmctldPort={ctld_port}",
        "SlurmUser=root",
        "SlurmdUser=root",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"AuthInfo=socket={d / 'munge.socket'}",
        f"StateSaveLocation={d / 'state'}",
        f"SlurmdSpoolDir={d / 'spool'}/%n",
        f"SlurmctldPidFile={d / 'slurmctld.pid'}",
        f"SlurmdPidFile={d}/slurmd-%n.pid",
        f"SlurmctldLogFile={d / 'slurmctld.log'}",
        f"SlurmdLogFile={d}/slurmd-%n.log",
        "SlurmdParameters=config_overrides",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "MpiDefault=none",
        "SchedulerType=sched/backfill",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core",
        "ReturnToService=2",
        "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none",
        "SlurmdTimeout=30",
        "InactiveLimit=0",
        "KillWait=30",
        *(f"NodeName={node} NodeHostname={socket.gethostname()} NodeAddr=127.0.0.1 "
          f"Port={port} CPUs={NODE_CPUS} State=UNKNOWN"
          for node, port in zip(NODES, slurmd_ports, strict=True)),
        # Jobs in `urgent` preempt jobs in `debug`, which are requeued (their next start
        # is a new attempt): the path a preempted training job takes.
        "PreemptType=preempt/partition_prio",
        "PreemptMode=REQUEUE",
        "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP PriorityTier=1",
        "PartitionName=urgent Nodes=ALL MaxTime=INFINITE State=UP PriorityTier=2",
        "",
    ])


def pidfile(name: str) -> PidFile:
    """The pid file each daemon writes itself (``--pid-file``, ``Slurm*PidFile``)."""
    return PidFile(DATA / f"{name}.pid")


def pid_of(name: str) -> int | None:
    return pidfile(name).running()


def node_states() -> dict[str, str]:
    """Each node's state (a node is listed once per partition; the same state on each);
    none before the first ``up`` wrote the configuration (sinfo would spend a minute
    looking for a controller elsewhere)."""
    conf = DATA / "slurm.conf"
    if not conf.exists():
        return {}
    try:
        done = subprocess.run(["sinfo", "-h", "-N", "-o", "%N %T"], capture_output=True,
                              text=True, check=False, env={**os.environ, "SLURM_CONF": str(conf)})
    except OSError:  # no sinfo: Slurm is not installed
        return {}
    if done.returncode != 0:
        return {}
    return dict(line.split(None, 1) for line in done.stdout.splitlines() if " " in line)


def ready() -> bool:
    states = node_states()
    return all(states.get(node) in ("idle", "mixed", "allocated") for node in NODES)


def up() -> None:
    install()
    for sub in ("state", *(f"spool/{node}" for node in NODES)):
        (DATA / sub).mkdir(parents=True, exist_ok=True)
    key = DATA / "munge.key"
    if not key.exists():
        key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    # Jobs run as unprivileged users: they pass through to slurmd's spool (their scripts)
    # and munged's socket; the key and the controller's state stay root's.
    DATA.chmod(0o711)
    for spool in (DATA / "spool", *(DATA / "spool" / node for node in NODES)):
        spool.chmod(0o755)
    (DATA / "state").chmod(0o700)
    if pid_of("munged") is None:
        subprocess.run(["munged", "--force", f"--key-file={key}",
                        f"--socket={DATA / 'munge.socket'}", f"--pid-file={DATA / 'munged.pid'}",
                        f"--log-file={DATA / 'munged.log'}", f"--seed-file={DATA / 'munge.seed'}"],
                       check=True, capture_output=True)
        wait_until("munged", lambda: (DATA / "munge.socket").exists(), seconds=10,
                   log=DATA / "munged.log", interval=0.2)
    conf = DATA / "slurm.conf"
    if pid_of("slurmctld") is None or not conf.exists():
        conf.write_text(config(free_port(), [free_port() for _ in NODES]))
    env = {**os.environ, "SLURM_CONF": str(conf)}
    if pid_of("slurmctld") is None:
        subprocess.run(["slurmctld", "-c", "-f", str(conf)], check=True, env=env)
    for node in NODES:
        if pid_of(f"slurmd-{node}") is None:
            subprocess.run(["slurmd", "-N", node, "-f", str(conf)], check=True, env=env)
    wait_until("the nodes", ready, seconds=60, log=DATA / f"slurmd-{NODES[-1]}.log",
               interval=0.2)
    log(f"nodes {', '.join(NODES)} idle in partitions debug and urgent; SLURM_CONF={conf}")
    print_env()


def print_env() -> None:
    print(export_lines({"SLURM_CONF": str(DATA / "slurm.conf")}), end="")


def down(wipe: bool) -> None:
    for name in reversed(DAEMONS):
        # The daemon alone (not its group), and no SIGKILL: slurmctld saves its state on
        # the way out; one still saving after 5 s is left to finish.
        stop(pidfile(name), grace=5.0, group=False, escalate=False)
    if wipe:
        shutil.rmtree(DATA, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(prog="scripts/slurm", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("up", help="start munged, slurmctld and slurmd")
    sub.add_parser("env", help="print `export SLURM_CONF=...`")
    sub.add_parser("status", help="each daemon, and the node's state")
    d = sub.add_parser("down", help="stop the daemons")
    d.add_argument("--wipe", action="store_true", help="also delete the state directory")
    args = parser.parse_args()
    try:
        if args.command == "up":
            up()
        elif args.command == "down":
            down(args.wipe)
        elif args.command == "env":
            print_env()
        else:
            for name in DAEMONS:
                print(status_line(name, pid_of(name) is not None))
            for node, state in sorted(node_states().items()):
                print(f"{node}\t{state}")
    except (ProcessError, subprocess.CalledProcessError) as exc:
        log(f"error: {exc}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
