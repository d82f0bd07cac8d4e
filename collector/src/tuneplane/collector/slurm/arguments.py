"""``tuneplane-collector slurm-node``'s arguments (its work is ``node``'s, imported only when
it runs: the other commands do not pay for its imports)."""

from __future__ import annotations

import argparse
from pathlib import Path

DESCRIPTION = """The collector of one node of a Slurm job, run by the job script control
submits, from the collector artifact verified on the node, before any training task starts.
It reads the job's one-time ticket from its standard input, refuses a spool root on a
shared filesystem, redeems the ticket with control, prints `tuneplane-collector: ready
attempt=N ...`, then reads the sources of this node's members (task i is rank-i) until
SIGTERM, drains for TUNEPLANE_TELEMETRY_DRAIN_SECONDS and reports what stayed spooled. Its
credentials are held in memory only, in a process other processes of the job's user cannot
read."""


def add_slurm_node(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("slurm-node", help="a Slurm job's collector on one node (run by the "
                                          "job script that control submits)",
                       description=DESCRIPTION)
    p.add_argument("--control", required=True, metavar="HOST:PORT", help="control's address")
    p.add_argument("--server-name", default="", help="TLS name of control, if not HOST")
    p.add_argument("--launch", type=int, required=True, help="the Slurm launch's id")
    p.add_argument("--spool-root", type=Path, required=True,
                   help="node-local directory of the members' spools")
    p.add_argument("--workdir", type=Path, required=True,
                   help="the training tasks' working directory on this node")
    p.add_argument("--workdir-given", action="store_true",
                   help="the working directory is the launch's own (never made here)")
    p.add_argument("--loglevel", default="INFO")


