"""``tuneplane-control``'s command line: ``serve`` and the administration commands."""

from __future__ import annotations

import argparse

from tuneplane.common.gateway import listener
from tuneplane.contract import flags
from tuneplane.control.settings import ControlSettings


def env_item(text: str) -> str:
    if "=" not in text or text.startswith("="):
        raise argparse.ArgumentTypeError(f"want NAME=VALUE, got {text!r}")
    return text


def parser(description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tuneplane-control", description=description,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser(
        "serve", help="serve Node control on 8443 over TLS",
        description="Node control: enrollment, launches, attempt reports and workload token "
                    "renewal, for node tokens only. Its own process, call limit and database "
                    "pool, so it never starves telemetry (or the reverse). Reads "
                    "TUNEPLANE_DATABASE_URL, TUNEPLANE_WEB_JWT_SECRET, TUNEPLANE_TELEMETRY_"
                    "TARGET, TUNEPLANE_TELEMETRY_SPOOL_ROOT, TUNEPLANE_TELEMETRY_COLLECTOR_"
                    "ARTIFACT (+ _SPOOL_BYTES, _DRAIN_SECONDS) and the TLS settings below "
                    "(docs/settings.md).")
    s.add_argument("--host", default="0.0.0.0", help="address to listen on (default 0.0.0.0)")
    s.add_argument("--port", type=int, default=8443, help="Node control port (default 8443)")
    listener.add_arguments(s)
    s.add_argument("--telemetry-server-name",
                   help="TLS name collectors verify when it differs from the target's host")
    flags.add_to(s, ControlSettings)
    s.add_argument("--slurm", action="store_true",
                   help="also serve Slurm jobs' collectors, and submit and follow Slurm "
                        "launches with this host's sbatch and squeue (SLURM_CONF)")
    s.add_argument("--slurm-control-address", metavar="HOST:PORT",
                   help="where the compute nodes reach this service (its TLS certificate "
                        "must name HOST, or give --slurm-control-server-name)")
    s.add_argument("--slurm-control-server-name", metavar="NAME",
                   help="TLS name the collectors verify when it differs from HOST")
    s.add_argument("--slurm-run-as", action="append", default=[],
                   metavar="[PROJECT=]USER",
                   help="the Unix user a project's Slurm jobs run as (repeatable; a bare "
                        "USER: every other project). Never root; other users than control's "
                        "own need control to run as root (sbatch --uid)")
    s.add_argument("--kubernetes", action="store_true",
                   help="also serve Kubernetes launches' collector sidecars, and submit and "
                        "follow Kubernetes launches as Indexed Jobs (the API from the pod's "
                        "service account, or KUBECONFIG)")
    s.add_argument("--kubernetes-control-address", metavar="HOST:PORT",
                   help="where the launches' pods reach this service (its TLS certificate "
                        "must name HOST, or give --kubernetes-control-server-name)")
    s.add_argument("--kubernetes-control-server-name", metavar="NAME",
                   help="TLS name the sidecars verify when it differs from HOST")
    s.add_argument("--kubernetes-namespace", action="append", default=[],
                   metavar="[PROJECT=]NAMESPACE",
                   help="the namespace a project's Jobs run in (repeatable; a bare NAMESPACE: "
                        "every other project); a project without one cannot launch")
    s.add_argument("--kubernetes-spool", action="append", default=[],
                   metavar="[PROJECT=]GRANT",
                   help="where a project's sidecars' spools live (repeatable; a bare GRANT: "
                        "every other project): emptyDir (the node's disk, gone with the pod), "
                        "hostPath:/DIR (a node directory shared as /tmp is, 1777) or "
                        "storageClass:NAME[:SIZE] (a generic ephemeral volume); a network "
                        "filesystem is refused by the collector (default emptyDir)")
    s.add_argument("--kubernetes-collector-image", metavar="IMAGE",
                   help="the sidecar's image, made from the collector artifact (default "
                        "tuneplane-collector:<the artifact's digest>)")
    s.add_argument("--kubernetes-pull-policy", default="IfNotPresent",
                   choices=("Always", "IfNotPresent", "Never"),
                   help="imagePullPolicy of the sidecar (default IfNotPresent)")
    s.add_argument("--kubernetes-workdir-limit", metavar="SIZE", default="",
                   help="sizeLimit of each pod's working directory (/work, an emptyDir the "
                        "training writes its sources to; 20Gi): the kubelet evicts a pod "
                        "past it (default: none, the node's disk)")
    s.add_argument("--loglevel", default="INFO")
    e = sub.add_parser("enrollment-token", help="print a one-time token that enrolls a node")
    e.add_argument("--node", required=True, help="the node's name")
    e.add_argument("--ttl", type=int, default=3600, help="seconds it stays usable (3600)")
    la = sub.add_parser(
        "launch", help="start the run's next attempt on a node, as a Slurm job or as a "
                       "Kubernetes Job; prints the attempt and launch ids as JSON",
        description="Node backend: one launch per --member on an enrolled --node. Slurm "
                    "backend: one batch job of --nodes x --tasks-per-node tasks, task i being "
                    "member rank-i, submitted and followed by a control service serving with "
                    "--slurm. Kubernetes backend: one Indexed Job of --indexes pods of "
                    "--image, index i being member rank-i, in the project's namespace, "
                    "submitted and followed by a control service serving with --kubernetes. "
                    "The attempt is pending until the job runs and ends as it ends.")
    la.add_argument("--run", required=True)
    la.add_argument("--backend", choices=("node", "slurm", "kubernetes"), default="node",
                    help="where it runs (default: node)")
    la.add_argument("--indexes", type=int, default=1,
                    help="Kubernetes: pods of the Indexed Job, index i being member rank-i "
                         "(default 1)")
    la.add_argument("--image", help="Kubernetes: the training container's image")
    la.add_argument("--request", action="append", type=env_item, default=[],
                    metavar="RESOURCE=QUANTITY",
                    help="Kubernetes: a resource request of each pod's training container "
                         "(cpu=2, memory=8Gi; repeatable)")
    la.add_argument("--limit", action="append", type=env_item, default=[],
                    metavar="RESOURCE=QUANTITY",
                    help="Kubernetes: a resource limit (nvidia.com/gpu=1; repeatable)")
    la.add_argument("--node", help="node backend: an enrolled node's name")
    la.add_argument("--member", action="append",
                    help="node backend: member to launch (repeatable; each must own a source)")
    la.add_argument("--nodes", type=int, default=1, help="Slurm: nodes of the job (default 1)")
    la.add_argument("--tasks-per-node", type=int, default=1,
                    help="Slurm: tasks (ranks) per node (default 1)")
    la.add_argument("--partition", help="Slurm: partition (default: the cluster's default)")
    la.add_argument("--time", help="Slurm: time limit, as sbatch --time takes it")
    la.add_argument("--workdir", metavar="DIR",
                    help="Slurm: the tasks' working directory, existing on every node "
                         "(default: a fresh one per node and start, below $TMPDIR or /tmp)")
    la.add_argument("--spool-root", metavar="DIR",
                    help="Slurm: the node-local directory of the collectors' spools, checked "
                         "on each node: a shared filesystem (NFS, Lustre, GPFS...) is refused "
                         "(default: TUNEPLANE_TELEMETRY_SPOOL_ROOT)")
    la.add_argument("--no-requeue", action="store_true",
                    help="Slurm, Kubernetes: never requeue the job (by default a job "
                         "preempted or requeued, or a Job whose pod was preempted or evicted, "
                         "starts again as the next attempt)")
    la.add_argument("--env", action="append", type=env_item, default=[], metavar="NAME=VALUE",
                    help="added to the training command's environment (repeatable)")
    la.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- COMMAND...",
                    help="the training command, after --")
    ls = sub.add_parser("launches", help="launches and their states, one JSON line each")
    ls.add_argument("--run")
    sub.add_parser("nodes", help="enrolled nodes, one JSON line each")
    sc = sub.add_parser("node-scope", help="which projects' launches a node takes (a fleet "
                                            "of one team's nodes)")
    sc.add_argument("node")
    which = sc.add_mutually_exclusive_group(required=True)
    which.add_argument("--project", action="append", metavar="PROJECT",
                       help="a project whose runs may launch on the node (repeatable)")
    which.add_argument("--any", action="store_true", help="launches of every project "
                                                          "(the default of a new node)")
    r = sub.add_parser("node-revoke", help="refuse a node's credential and the workload tokens "
                                           "issued through it from now on, and cancel its "
                                           "unused enrollment tokens")
    r.add_argument("node")
    return p
