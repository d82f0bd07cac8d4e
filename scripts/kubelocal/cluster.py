"""Bringing the cluster up and down.

``up`` installs and builds what is missing, writes the certificates and configurations,
starts each daemon not running yet and waits until it is healthy, imports the sandbox
image, and waits for the node to be Ready and the ``default`` service account to exist
(pods are refused before it). ``down`` deletes every pod first, while the kubelet still
runs to stop their containers, then stops the daemons in reverse order, removes the pod
network's bridge and the iptables chains of the CNI plugins and kube-proxy, and unmounts
what the kubelet and containerd left mounted below ``.kube-local/``.
"""

from __future__ import annotations

import subprocess
import time

from scripts.kubelocal import binaries, configs, daemons, dns, images, netpol, pki
from scripts.kubelocal.layout import BIN, DATA, kubeconfig, log, node_ip, ports
from scripts.lib.processes import PidFile, spawn, stop, wait_until


def pidfile(name: str) -> PidFile:
    return PidFile(DATA / f"{name}.pid")


def up() -> None:
    started = time.monotonic()
    binaries.install()
    binaries.build()
    DATA.mkdir(parents=True, exist_ok=True)
    address, kept = node_ip(), ports()
    pki.make(address, kept["apiserver"])
    configs.write(address, kept)
    dns.write(address, kept)
    for daemon in daemons.daemons(address, kept):
        pid = pidfile(daemon.name)
        if pid.running() is None:
            if daemon.prepare is not None:
                daemon.prepare()
            spawn(daemon.args, log=daemon.log, pidfile=pid)
        wait_until(daemon.name, daemon.healthy, seconds=daemon.seconds, log=daemon.log,
                   process=pid, interval=0.2)
        if daemon.then is not None:
            daemon.then()
    wait_until("the default service account", lambda: bool(daemons.kubectl(
        "get", "serviceaccount", "default", "-o", "name", check=False).strip()), seconds=60,
        log=DATA / "controller-manager.log", interval=0.2)
    log(f"node Ready in {time.monotonic() - started:.1f} s; KUBECONFIG={kubeconfig()}")


def running(name: str) -> bool:
    return pidfile(name).running() is not None


def delete_pods() -> None:
    """Every pod, at once, while the kubelet runs to stop their containers; the
    controllers are stopped first, so none is made again."""
    for name in ("controller-manager", "scheduler"):
        stop(pidfile(name), grace=10.0)
    if not (running("kube-apiserver") and running("kubelet")):
        return
    daemons.kubectl("delete", "pods", "--all", "--all-namespaces", "--grace-period=0",
                    "--force", "--wait=false", check=False)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and running("containerd"):
        tasks = images.ctr("tasks", "ls").splitlines()[1:]
        if not [t for t in tasks if "RUNNING" in t]:
            break
        time.sleep(0.5)


def unmount_below_data() -> None:
    with open("/proc/self/mountinfo") as table:
        points = [line.split()[4] for line in table]
    for point in sorted((p for p in points if p.startswith(f"{DATA}/")), reverse=True):
        subprocess.run(["umount", "-l", point], capture_output=True, check=False)


def clean_network() -> None:
    subprocess.run(["ip", "link", "delete", "cni0"], capture_output=True, check=False)
    if (BIN / "kube-proxy").exists():
        subprocess.run([str(BIN / "kube-proxy"), "--cleanup"], capture_output=True,
                       check=False)
    saved = subprocess.run(["iptables-save"], capture_output=True, text=True, check=False)
    if saved.returncode == 0 and ("CNI-" in saved.stdout or "KUBE-" in saved.stdout):
        kept = "\n".join(line for line in saved.stdout.splitlines()
                         if "CNI-" not in line and "KUBE-" not in line) + "\n"
        subprocess.run(["iptables-restore"], input=kept, text=True, capture_output=True,
                       check=False)


def down(wipe: bool) -> None:
    if DATA.exists():
        delete_pods()
        netpol.unsteer()
        for name in ("netpol", "coredns", "kube-proxy", "kubelet", "scheduler",
                     "controller-manager"):
            stop(pidfile(name), grace=10.0)
        stop(pidfile("containerd"), grace=10.0)
        subprocess.run(["pkill", "-f", f"containerd-shim-runc-v2 .*-address {configs.SOCKET}"],
                       capture_output=True, check=False)
        for name in ("kube-apiserver", "etcd"):
            stop(pidfile(name), grace=10.0)
        clean_network()
        unmount_below_data()
    if wipe:
        subprocess.run(["rm", "-rf", str(DATA)], check=False)
