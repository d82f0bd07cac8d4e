"""Where the local cluster keeps everything, its version, names, address ranges and ports."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from scripts.lib.ports import PortFile

ROOT = Path(__file__).resolve().parent.parent.parent
DATA = Path(os.environ.get("TUNEPLANE_KUBE_DIR", ROOT / ".kube-local"))
VERSION = "v1.37.2"
CACHE = Path(os.environ.get("TUNEPLANE_CACHE_DIR", Path.home() / ".cache" / "tuneplane"))
BIN = CACHE / "kube" / VERSION
#: The add-ons (CoreDNS), built from ``addons/``, named by what that module pins.
ADDONS = CACHE / "kube" / "addons-coredns-v1.15.0"
#: kube-network-policies, built from ``addons/netpol``, named by what that module pins (and
#: a revision of its main.go).
NETPOL = CACHE / "kube" / "addons-netpol-v0.8.0-r2"
BINARIES = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet",
            "kube-proxy", "kubectl")
NODE = "tuneplane-kube"
SERVICE_CIDR = "10.96.0.0/16"
#: The ``kubernetes`` Service's address (the first of the range), in the API server's
#: certificate: pods reach the API through it.
SERVICE_IP = "10.96.0.1"
#: The ``kube-dns`` Service's address, in every pod's resolv.conf (see ``dns``).
DNS_IP = "10.96.0.10"
POD_CIDR = "10.244.0.0/24"
#: The containerd namespace the kubelet's images live in.
NAMESPACE = "k8s.io"
PAUSE_IMAGE = "tuneplane.local/pause:3.10"
PORTS = ("apiserver", "etcd", "etcd-peer", "kubelet", "kubelet-healthz",
         "controller-manager", "scheduler", "proxy-metrics", "proxy-healthz", "dns",
         "dns-health", "dns-ready")


def log(message: str) -> None:
    print(f"kube: {message}", file=sys.stderr, flush=True)


def ports() -> dict[str, int]:
    """Every port the cluster listens on, picked free at the first ``up`` and kept."""
    return PortFile(DATA / "ports.json").ports(PORTS)


def node_ip() -> str:
    """The host's address pods reach it at (the default route's source; else the first
    global IPv4 address): the API server and the kubelet listen there."""
    route = subprocess.run(["ip", "-4", "-o", "route", "get", "8.8.8.8"], capture_output=True,
                           text=True, check=False).stdout.split()
    if "src" in route:
        return route[route.index("src") + 1]
    addresses = subprocess.run(["ip", "-4", "-o", "addr", "show", "scope", "global"],
                               capture_output=True, text=True, check=False).stdout.split()
    found = [a.split("/")[0] for i, a in enumerate(addresses) if addresses[i - 1] == "inet"]
    if not found:
        raise RuntimeError("this host has no global IPv4 address for the cluster's node")
    return found[0]


def kubeconfig(name: str = "admin") -> Path:
    return DATA / "pki" / f"{name}.kubeconfig"
