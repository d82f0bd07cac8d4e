"""What the Kubernetes launch tests share: the stand-in training image and artifact, calls
to the release's web API, waiting for a run's launches to end, and the launches' pods'
logs."""

from __future__ import annotations

import json
import time
import urllib.request
from pathlib import Path
from typing import Any

from tests.kube import trainer
from tests.kube.release import Release
from tests.support.kube import kubectl, run_kubectl
from tests.support.readback import Web

TRAINING_IMAGE = "python:3.11-slim"
ARTIFACT = {"version": 1, "sources": [
    entry for rank in (0, 1) for entry in (
        {"id": f"metrics-{rank}", "kind": "jsonl", "path": f"rank-{rank}/metrics.jsonl",
         "owner": f"rank-{rank}"},
        {"id": f"tb-{rank}", "kind": "tensorboard", "path": f"rank-{rank}/tb",
         "owner": f"rank-{rank}"})]}


def call(web: Web, method: str, path: str, body: Any = None) -> Any:
    request = urllib.request.Request(
        f"{web.base}{path}", method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {web.token}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.loads(answer.read() or b"null")


def shown(launch: dict[str, Any]) -> str:
    """A launch whole, for a failed assertion's message (pytest would cut its repr short
    of its detail and events)."""
    return json.dumps(launch, indent=1)


def launched(web: Web, run_id: str, seconds: float = 300) -> dict[str, Any]:
    """The run's launch once its attempt has ended."""
    deadline = time.monotonic() + seconds
    while True:
        (launch,) = call(web, "GET", f"/runs/{run_id}/launches")
        if launch["attempt_state"] not in ("pending", "running"):
            return dict(launch)
        assert time.monotonic() < deadline, f"attempt still {launch['attempt_state']}: {launch}"
        time.sleep(1)


def launches_ended(web: Web, run_id: str, count: int, seconds: float = 300
                   ) -> list[dict[str, Any]]:
    """The run's ``count`` launches once each has ended."""
    deadline = time.monotonic() + seconds
    while True:
        listed = call(web, "GET", f"/runs/{run_id}/launches")
        if len(listed) == count and all(launch["state"] == "ended" for launch in listed):
            return list(listed)
        assert time.monotonic() < deadline, f"launches not ended: {listed}"
        time.sleep(1)


def pod_logs(release: Release, launch_id: int, container: str, *, started: bool = True) -> str:
    """What the launch's pods' ``container`` printed; with ``started=False``, "" while it
    has not started yet."""
    args = ("-n", release.jobs_namespace, "logs", "-l", f"tuneplane.dev/launch={launch_id}",
            "-c", container, "--tail=-1")
    if started:
        return kubectl(*args)
    done = run_kubectl(args, None, 60)
    return done.stdout if done.returncode == 0 else ""


def training(web: Web, run_id: str, artifact: dict[str, Any], indexes: int,
             pause: float) -> int:
    """The run made with ``artifact`` and launched as ``indexes`` pods of the stand-in
    trainer, ``pause`` seconds between its bursts; the launch."""
    call(web, "POST", "/runs", {"run_id": run_id, "integration": artifact})
    queued = call(web, "POST", f"/runs/{run_id}/kubernetes-launches", {
        "indexes": indexes, "image": TRAINING_IMAGE, "environment": {"TRAINER_PAUSE": str(pause)},
        "command": ["python3", "-c", Path(trainer.__file__).read_text()]})
    return int(queued["kubernetes_launch"])


def written(release: Release, launch_id: int, said: str, seconds: float = 180) -> None:
    """Returns once the launch's training containers have printed ``said``."""
    deadline = time.monotonic() + seconds
    while said not in pod_logs(release, launch_id, "training", started=False):
        assert time.monotonic() < deadline, f"the training containers never said {said!r}"
        time.sleep(0.5)
