"""The cluster's daemons: how each is started (its command line) and when it is healthy.

Started in this order and stopped in the reverse (the pods first, see ``teardown``): etcd,
containerd, the API server, the controller manager, the scheduler, the kubelet, kube-proxy,
CoreDNS (its Service and role applied first, see ``dns``), kube-network-policies (its role
first, see ``netpol``). Each runs in a session of its
own, its output in ``.kube-local/<name>.log``, known by its pid file; each is checked
healthy before the next starts.
"""

from __future__ import annotations

import ssl
import subprocess
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from scripts.kubelocal import dns, images, netpol
from scripts.kubelocal.configs import CONTAINERD, KUBELET, SOCKET
from scripts.kubelocal.layout import ADDONS, BIN, DATA, NODE, SERVICE_CIDR, kubeconfig
from scripts.kubelocal.pki import PKI


@dataclass(frozen=True, slots=True)
class Daemon:
    name: str
    args: list[str]
    healthy: Callable[[], bool]
    seconds: float = 60.0
    #: Run before it starts (once the daemons before it are healthy).
    prepare: Callable[[], object] | None = None
    #: Run once it is healthy, whether started now or running already.
    then: Callable[[], object] | None = None

    @property
    def log(self) -> Path:
        return DATA / f"{self.name}.log"


def answers(url: str, *, secure: bool = False) -> bool:
    """Whether ``url`` answers 200. Over TLS (``secure``) the CA's certificate is checked
    and the admin's identity given; other ``https`` URLs are the health endpoints of the
    controller manager and the scheduler, which serve a certificate of their own making on
    loopback and need no identity."""
    context = None
    if secure:
        context = ssl.create_default_context(cafile=str(PKI / "ca.crt"))
        context.check_hostname = False
        context.load_cert_chain(str(PKI / "admin.crt"), str(PKI / "admin.key"))
    elif url.startswith("https:"):
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    try:
        with urllib.request.urlopen(url, timeout=2, context=context) as reply:
            return bool(reply.status == 200)
    except OSError:
        return False


def kubectl(*args: str, check: bool = True, input: str | None = None) -> str:
    done = subprocess.run([str(BIN / "kubectl"), "--kubeconfig", str(kubeconfig()), *args],
                          capture_output=True, text=True, check=False, timeout=60, input=input)
    if check and done.returncode != 0:
        raise RuntimeError(f"kubectl {' '.join(args)}: {done.stderr.strip()[-500:]}")
    return done.stdout


def node_ready() -> bool:
    said = kubectl("get", "node", NODE, "-o",
                   "jsonpath={.status.conditions[?(@.type=='Ready')].status}", check=False)
    return said.strip() == "True"


def daemons(node_ip: str, ports: dict[str, int]) -> list[Daemon]:
    p = {name: str(port) for name, port in ports.items()}
    pki = {name: str(PKI / name) for name in (
        "ca.crt", "ca.key", "apiserver.crt", "apiserver.key", "service-account.key",
        "service-account.pub", "apiserver-kubelet-client.crt", "apiserver-kubelet-client.key")}
    etcd = f"http://127.0.0.1:{p['etcd']}"
    peer = f"http://127.0.0.1:{p['etcd-peer']}"

    def component(name: str) -> list[str]:
        config = str(kubeconfig(name))
        return [f"--kubeconfig={config}", f"--authentication-kubeconfig={config}",
                f"--authorization-kubeconfig={config}", "--bind-address=127.0.0.1",
                f"--secure-port={p[name]}", "--leader-elect=false"]

    return [
        Daemon("etcd", ["etcd", "--name=tuneplane", f"--data-dir={DATA / 'etcd'}",
                        f"--listen-client-urls={etcd}", f"--advertise-client-urls={etcd}",
                        f"--listen-peer-urls={peer}", f"--initial-advertise-peer-urls={peer}",
                        f"--initial-cluster=tuneplane={peer}"],
               lambda: answers(f"{etcd}/health")),
        Daemon("containerd", ["containerd", "--config", str(CONTAINERD / "config.toml")],
               SOCKET.exists, then=images.pause),
        Daemon("kube-apiserver", [
            str(BIN / "kube-apiserver"), f"--etcd-servers={etcd}", "--bind-address=0.0.0.0",
            f"--secure-port={p['apiserver']}", f"--advertise-address={node_ip}",
            f"--service-cluster-ip-range={SERVICE_CIDR}", f"--client-ca-file={pki['ca.crt']}",
            f"--tls-cert-file={pki['apiserver.crt']}",
            f"--tls-private-key-file={pki['apiserver.key']}",
            f"--kubelet-client-certificate={pki['apiserver-kubelet-client.crt']}",
            f"--kubelet-client-key={pki['apiserver-kubelet-client.key']}",
            f"--kubelet-certificate-authority={pki['ca.crt']}",
            "--kubelet-preferred-address-types=InternalIP",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={pki['service-account.pub']}",
            f"--service-account-signing-key-file={pki['service-account.key']}",
            "--authorization-mode=Node,RBAC", "--allow-privileged=true",
            "--enable-admission-plugins=NodeRestriction", "--profiling=false"],
            lambda: answers(f"https://127.0.0.1:{p['apiserver']}/readyz", secure=True), 90),
        Daemon("controller-manager", [
            str(BIN / "kube-controller-manager"), *component("controller-manager"),
            f"--service-account-private-key-file={pki['service-account.key']}",
            f"--root-ca-file={pki['ca.crt']}", f"--cluster-signing-cert-file={pki['ca.crt']}",
            f"--cluster-signing-key-file={pki['ca.key']}",
            "--use-service-account-credentials=true",
            f"--service-cluster-ip-range={SERVICE_CIDR}"],
            lambda: answers(f"https://127.0.0.1:{p['controller-manager']}/healthz")),
        Daemon("scheduler", [str(BIN / "kube-scheduler"), *component("scheduler")],
               lambda: answers(f"https://127.0.0.1:{p['scheduler']}/healthz")),
        Daemon("kubelet", [
            str(BIN / "kubelet"), f"--config={DATA / 'kubelet.json'}",
            f"--kubeconfig={kubeconfig('kubelet')}", f"--hostname-override={NODE}",
            f"--node-ip={node_ip}", f"--root-dir={KUBELET}", f"--cert-dir={KUBELET / 'pki'}"],
            node_ready, 90),
        Daemon("kube-proxy", [str(BIN / "kube-proxy"), f"--config={DATA / 'proxy.json'}"],
               lambda: answers(f"http://127.0.0.1:{p['proxy-healthz']}/healthz")),
        Daemon("coredns", [str(ADDONS / "coredns"), "-conf", str(dns.COREFILE)],
               lambda: answers(f"http://127.0.0.1:{p['dns-ready']}/ready"),
               prepare=lambda: kubectl("apply", "-f", "-", input=dns.objects(node_ip, ports))),
        Daemon("netpol", netpol.command(), netpol.reading,
               prepare=lambda: kubectl("apply", "-f", "-", input=netpol.objects()),
               then=netpol.steer),
    ]
