"""What the cluster runs: Debian's etcd, containerd, runc and CNI plugins (installed when
absent), and Kubernetes' binaries with the pod sandbox program and CoreDNS, built from the
Go module proxy once (about 12 minutes on 2 cores, CoreDNS and kube-network-policies a few
more) into the cache, never
into the checkout."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from scripts.kubelocal.layout import ADDONS, BIN, BINARIES, NETPOL, VERSION, log

PACKAGES = {"etcd": "etcd-server", "containerd": "containerd", "runc": "runc",
            "/usr/lib/cni/bridge": "containernetworking-plugins", "conntrack": "conntrack",
            "iptables": "iptables", "openssl": "openssl"}
MODULE = Path(__file__).resolve().parent / "binaries"
ADDONS_MODULE = Path(__file__).resolve().parent / "addons"


def install() -> None:
    missing = sorted({package for tool, package in PACKAGES.items()
                      if not (Path(tool).exists() if tool.startswith("/") else shutil.which(tool))})
    if not missing:
        return
    log(f"installing Debian's {', '.join(missing)}")
    done = subprocess.run(["sh", "-c", "apt-get update -q && DEBIAN_FRONTEND=noninteractive "
                           f"apt-get install -y -q --no-install-recommends {' '.join(missing)}"],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"could not install {', '.join(missing)} (needs root): "
                           f"{done.stderr.strip()[-500:]}")


def built() -> bool:
    return all((BIN / name).is_file() for name in (*BINARIES, "pause")) and \
        (ADDONS / "coredns").is_file() and (NETPOL / "kube-network-policies").is_file()


def go_build(module: Path, packages: list[str], into: Path, flags: str = "-s -w") -> None:
    done = subprocess.run(["go", "build", "-trimpath", "-ldflags", flags, "-o", f"{into}/",
                           *packages], cwd=module, env={**os.environ, "CGO_ENABLED": "0"},
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"go build {' '.join(packages)} failed: {done.stderr.strip()[-2000:]}")


def whole(place: Path, fill: Callable[[Path], None]) -> None:
    """``place`` filled by ``fill`` in a sibling directory renamed into place once whole, so
    a partial build is never taken for one."""
    partial = place.with_name(place.name + ".partial")
    partial.mkdir(parents=True, exist_ok=True)
    fill(partial)
    shutil.rmtree(place, ignore_errors=True)
    partial.rename(place)


def build() -> None:
    """The binaries of ``VERSION`` and the add-ons into the cache."""
    if built():
        return
    if shutil.which("go") is None:
        raise RuntimeError("building Kubernetes needs Go (https://go.dev) on PATH")
    if not all((BIN / name).is_file() for name in (*BINARIES, "pause")):
        whole(BIN, kubernetes)
    if not (ADDONS / "coredns").is_file():
        log(f"building CoreDNS into {ADDONS}")
        whole(ADDONS, lambda into: go_build(ADDONS_MODULE, ["./coredns"], into))
    if not (NETPOL / "kube-network-policies").is_file():
        log(f"building kube-network-policies into {NETPOL}")
        whole(NETPOL, lambda into: go_build(ADDONS_MODULE / "netpol", ["."], into))


def kubernetes(into: Path) -> None:
    version = "k8s.io/component-base/version"
    flags = (f"-s -w -X {version}.gitVersion={VERSION} -X {version}.gitMajor=1 "
             f"-X {version}.gitMinor={VERSION.split('.')[1]} -X {version}.gitTreeState=clean")
    log(f"building Kubernetes {VERSION} from the Go module proxy into {BIN} (about 12 minutes "
        "the first time)")
    for packages in ([f"k8s.io/kubernetes/cmd/{name}" for name in BINARIES], ["./pause"]):
        go_build(MODULE, packages, into, flags)
