"""scripts/kube: a local single-node Kubernetes cluster (see the package's docstring).

    scripts/kube build    build Kubernetes into the cache when missing (`up` does this too)
    scripts/kube up       start it (building Kubernetes into the cache the first time)
    scripts/kube images NAME...   import images Docker holds into the cluster's containerd
    scripts/kube env      print `export KUBECONFIG=...`
    scripts/kube status   whether each daemon runs, and the node's state
    scripts/kube down     delete the pods and stop it (--wipe: also delete .kube-local/)

``eval "$(scripts/kube up)"`` starts it and sets ``KUBECONFIG`` in the shell.
"""

from __future__ import annotations

import argparse
import subprocess
import sys

from scripts.kubelocal import binaries, cluster, daemons, images
from scripts.kubelocal.layout import BIN, DATA, kubeconfig, log
from scripts.lib.exports import export_lines
from scripts.lib.processes import ProcessError, status_line

NAMES = ("etcd", "containerd", "kube-apiserver", "controller-manager", "scheduler", "kubelet",
         "kube-proxy", "coredns", "netpol")


def print_env() -> None:
    print(export_lines({"KUBECONFIG": str(kubeconfig()), "TUNEPLANE_KUBE_BIN": str(BIN)}),
          end="")


def status() -> None:
    for name in NAMES:
        print(status_line(name, cluster.running(name)))
    if cluster.running("kube-apiserver"):
        print(daemons.kubectl("get", "nodes", "-o", "wide", check=False), end="")


def main() -> int:
    parser = argparse.ArgumentParser(prog="scripts/kube", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("build", help="build Kubernetes into the cache, when missing (no "
                                 "package is installed: scripts/test runs it beside apt)")
    sub.add_parser("up", help="start the cluster (etcd, containerd, the control plane, "
                              "the kubelet, kube-proxy)")
    i = sub.add_parser("images", help="import images Docker holds into the cluster "
                                      "(pods use them with imagePullPolicy: Never)")
    i.add_argument("names", nargs="+", metavar="NAME")
    sub.add_parser("env", help="print `export KUBECONFIG=...`")
    sub.add_parser("status", help="each daemon, and the node")
    d = sub.add_parser("down", help="delete the pods and stop the daemons")
    d.add_argument("--wipe", action="store_true", help=f"also delete {DATA}")
    args = parser.parse_args()
    try:
        if args.command == "build":
            binaries.build()
            print(BIN)
        elif args.command == "up":
            cluster.up()
            print_env()
        elif args.command == "down":
            cluster.down(args.wipe)
        elif args.command == "images":
            images.from_docker(args.names)
        elif args.command == "env":
            print_env()
        else:
            status()
    except (ProcessError, RuntimeError, subprocess.CalledProcessError) as exc:
        log(f"error: {exc}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
