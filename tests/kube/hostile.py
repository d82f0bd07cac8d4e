"""A hostile training command for the Kubernetes launch tests, run in the training container
of a launch's pod by the image's python3 (standard library only: its source is the
container's command). It tries every way at what the pod's collector sidecar holds or the
cluster guards, and prints one JSON object: each attempt and what came of it. It also
links its source file to the sidecar's ticket, which the sidecar must refuse to read."""

from __future__ import annotations

import json
import os
import ssl
import urllib.error
import urllib.request
from collections.abc import Callable

TICKET = "/run/tuneplane/ticket/ticket"


def attempt(tried: dict[str, str], what: str, action: Callable[[], object]) -> None:
    try:
        tried[what] = f"done: {str(action())[:200]}"
    except Exception as exc:  # the outcome is what is reported
        tried[what] = f"failed: {type(exc).__name__}: {exc}"[:300]


def read(path: str) -> str:
    with open(path) as file:
        return file.read()


def api(namespace: str) -> str:
    host = os.environ.get("KUBERNETES_SERVICE_HOST", "kubernetes.default.svc")
    port = os.environ.get("KUBERNETES_SERVICE_PORT", "443")
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    url = f"https://{host}:{port}/api/v1/namespaces/{namespace}/secrets"
    try:
        with urllib.request.urlopen(url, timeout=10, context=context) as answer:
            return f"HTTP {answer.status}"
    except urllib.error.HTTPError as exc:
        raise PermissionError(f"HTTP {exc.code}") from None


def others() -> list[str]:
    """The command lines of every process this container sees but its own."""
    seen = []
    for pid in os.listdir("/proc"):
        if pid.isdigit() and int(pid) != os.getpid():
            try:
                seen.append(read(f"/proc/{pid}/cmdline").replace("\0", " "))
            except OSError:
                seen.append(f"{pid}: unreadable")
    return seen


def main() -> None:
    tried: dict[str, str] = {}
    attempt(tried, "service account token",
            lambda: read("/var/run/secrets/kubernetes.io/serviceaccount/token"))
    attempt(tried, "the API server's secrets", lambda: api("kube-system"))
    attempt(tried, "the ticket", lambda: read(TICKET))
    attempt(tried, "the spool", lambda: os.listdir("/var/spool/tuneplane"))
    attempt(tried, "the kubelet's pod volumes", lambda: os.listdir("/var/lib/kubelet/pods"))
    attempt(tried, "another process",
            lambda: next(c for c in others() if "tuneplane-collector" in c))
    attempt(tried, "root", lambda: os.setuid(0))
    os.makedirs("rank-0", exist_ok=True)
    attempt(tried, "a source linked to the ticket",
            lambda: os.symlink(TICKET, "rank-0/metrics.jsonl"))
    print(json.dumps({"uid": os.getuid(), "tried": tried}), flush=True)


main()
