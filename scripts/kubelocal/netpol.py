"""NetworkPolicies, enforced: kube-network-policies (sigs.k8s.io/kube-network-policies,
built from ``addons/netpol``) on the host, as a daemon like the others.

The bridge CNI plugin enforces no policy. This controller watches NetworkPolicies, pods and
namespaces (as ``system:kube-network-policies``, which may only read those) and judges
each packet it reads from an NFQUEUE against the policies: accepted, or dropped.

How packets reach the queue is done here, not by the daemon. It would steer them with an
nftables ``queue`` expression, which this host's kernel lacks (it has no ``nft_queue``;
the daemon logs that its nftables sync fails, and judges packets all the same). The
iptables ``NFQUEUE`` target is there, so a chain of our own (``CHAIN``, in mangle's
POSTROUTING: after Services are translated to pods, before source NAT) queues every new
connection to or from the pod network, as the daemon's own rules do with admin policies
on. Packets of established connections, DNS, and those the host's root processes send
(the kubelet's probes, the API server asking a webhook) pass without being judged, as
they do with the daemon's rules. The chain is added once the daemon reads the queue and
removed before it stops (``down``): a packet queued with no daemon reading is dropped.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from scripts.kubelocal.layout import NETPOL, NODE, POD_CIDR, kubeconfig
from scripts.kubelocal.pki import user_role

TABLE = ("inet", "kube-network-policies")
QUEUE = 100
CHAIN = "TUNEPLANE-NETPOL"
QUEUES = Path("/proc/net/netfilter/nfnetlink_queue")
USER = "system:kube-network-policies"
RULES: list[dict[str, object]] = [
    {"apiGroups": [""], "resources": ["pods", "namespaces", "nodes"],
     "verbs": ["list", "watch"]},
    {"apiGroups": ["networking.k8s.io"], "resources": ["networkpolicies"],
     "verbs": ["list", "watch"]}]


def objects() -> str:
    """The role and its binding, as one List for ``kubectl apply``."""
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": user_role(USER, RULES)})


def command() -> list[str]:
    return [str(NETPOL / "kube-network-policies"), f"-kubeconfig={kubeconfig('netpol')}",
            f"-node={NODE}", f"-nfqueue-id={QUEUE}", "-v=1"]


def reading() -> bool:
    """Whether the daemon reads its queue (it opens it once its caches have synced)."""
    lines = QUEUES.read_text().splitlines() if QUEUES.exists() else []
    return any(line.split()[:1] == [str(QUEUE)] for line in lines)


def iptables(*args: str, check: bool = True) -> bool:
    done = subprocess.run(["iptables", "-w", "-t", "mangle", *args], capture_output=True,
                          text=True, check=False)
    if check and done.returncode != 0:
        raise RuntimeError(f"iptables -t mangle {' '.join(args)}: {done.stderr.strip()}")
    return done.returncode == 0


def steer() -> None:
    """The chain that queues the pod network's new connections, made afresh."""
    unsteer()
    iptables("-N", CHAIN)
    for rule in (["-p", "udp", "--dport", "53", "-j", "RETURN"],
                 ["-m", "owner", "--uid-owner", "0", "-j", "RETURN"],
                 ["-m", "conntrack", "--ctstate", "ESTABLISHED,RELATED", "-j", "RETURN"],
                 ["-s", POD_CIDR, "-j", "NFQUEUE", "--queue-num", str(QUEUE)],
                 ["-d", POD_CIDR, "-j", "NFQUEUE", "--queue-num", str(QUEUE)]):
        iptables("-A", CHAIN, *rule)
    iptables("-A", "POSTROUTING", "-j", CHAIN)


def unsteer() -> None:
    while iptables("-D", "POSTROUTING", "-j", CHAIN, check=False):
        pass
    iptables("-F", CHAIN, check=False)
    iptables("-X", CHAIN, check=False)
    subprocess.run(["nft", "delete", "table", *TABLE], capture_output=True, check=False)
