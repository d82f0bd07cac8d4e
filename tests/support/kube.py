"""The local Kubernetes cluster scripts/kube starts: kubectl against it, and waiting for
what it runs."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest


def kubeconfig() -> str:
    """KUBECONFIG of the running local cluster, or the test fails saying how to start it."""
    found = os.environ.get("KUBECONFIG", "")
    if not found or not Path(found).exists():
        pytest.fail("KUBECONFIG is not set: start the cluster with `eval \"$(scripts/kube up)\"`",
                    pytrace=False)
    return found


def run_kubectl(args: tuple[str, ...], input: str | None, seconds: float
                ) -> subprocess.CompletedProcess[str]:
    binary = Path(os.environ.get("TUNEPLANE_KUBE_BIN", "")) / "kubectl"
    return subprocess.run([str(binary), "--kubeconfig", kubeconfig(), *args], input=input,
                          capture_output=True, text=True, check=False, timeout=seconds)


def kubectl(*args: str, input: str | None = None, seconds: float = 120) -> str:
    """kubectl's output; the test fails with its error otherwise."""
    done = run_kubectl(args, input, seconds)
    assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stderr}"
    return done.stdout


def kubectl_refused(*args: str, input: str | None = None, seconds: float = 120) -> str:
    """kubectl's error output for a command that must fail; the test fails if it did not."""
    done = run_kubectl(args, input, seconds)
    assert done.returncode != 0, f"kubectl {' '.join(args)} was not refused: {done.stdout}"
    return done.stderr


def node_ip() -> str:
    """The node's InternalIP (where NodePorts answer)."""
    node = json.loads(kubectl("get", "nodes", "-o", "json"))["items"][0]
    return str(next(a["address"] for a in node["status"]["addresses"]
                    if a["type"] == "InternalIP"))


def wait_for_pod(name: str, seconds: float = 120) -> None:
    """Until the pod is Ready; fails with its status (and events) otherwise."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        pod = json.loads(kubectl("get", "pod", name, "-o", "json"))
        ready = [c for c in pod["status"].get("conditions", []) if c["type"] == "Ready"]
        if ready and ready[0]["status"] == "True":
            return
        time.sleep(0.5)
    events = kubectl("get", "events", "--field-selector", f"involvedObject.name={name}")
    raise AssertionError(f"pod {name} not Ready after {seconds:.0f} s: {pod['status']}\n{events}")
