"""What launching through Tuneplane adds to a Kubernetes Job, on the local cluster.

    eval "$(scripts/kube up)"; uv run python -m tests.support.charts images
    uv run python bench/kubernetes.py [--rounds 3] [--pause 0.3]

It installs the chart's release as the Kubernetes tests do (tests/kube/release.py: the
stores, the gateway, control with Kubernetes launches, the collector image of this
checkout's artifact), then runs the same 2-index training Job (tests/kube/trainer.py: 600
steps of JSONL and TensorBoard per rank, in five bursts ``--pause`` seconds apart) twice a
round: once applied with ``kubectl apply`` (the peer: the training container alone, no
telemetry), once launched through the web API (``POST .../kubernetes-launches``: control
makes the Job with each pod's collector sidecar, control's 2 s poll). It prints, per round
and as medians: the plain Job's apply → Complete; the launch's launch → attempt finished,
and its parts: → Job made (control's poll), → every sidecar redeemed its ticket (the image
started, the spool checked, the ticket redeemed: the training container starts then), →
first point stored; and that every point was stored.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.kube import trainer
from tests.kube.launching import ARTIFACT, TRAINING_IMAGE, call
from tests.kube.release import Release, deployed
from tests.support.kube import kubectl
from tests.support.readback import Web
from tuneplane.control.kube.manifest import INDEX
from tuneplane.telemetry.v1.identity import MemberKey


def plain_job(release: Release, pause: float) -> float:
    """The training alone as a 2-index Job, applied with kubectl; seconds to Complete."""
    name = f"plain-{uuid.uuid4().hex[:8]}"
    training = {"name": "training", "image": TRAINING_IMAGE, "workingDir": "/work",
                "command": ["python3", "-c", Path(trainer.__file__).read_text()],
                "env": [INDEX,
                        {"name": "TUNEPLANE_MEMBER", "value": "rank-$(JOB_COMPLETION_INDEX)"},
                        {"name": "TRAINER_PAUSE", "value": str(pause)}],
                "securityContext": {"runAsUser": 1000, "runAsNonRoot": True},
                "volumeMounts": [{"name": "work", "mountPath": "/work"}]}
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
           "spec": {"completionMode": "Indexed", "completions": 2, "parallelism": 2,
                    "backoffLimit": 0, "template": {"spec": {
                        "restartPolicy": "Never", "automountServiceAccountToken": False,
                        "containers": [training],
                        "volumes": [{"name": "work", "emptyDir": {}}]}}}}
    started = time.monotonic()
    kubectl("-n", release.jobs_namespace, "apply", "-f", "-", input=json.dumps(job))
    while True:
        status = json.loads(kubectl("-n", release.jobs_namespace, "get", "job", name, "-o",
                                    "json"))["status"]
        done = {c["type"] for c in status.get("conditions", []) if c["status"] == "True"}
        if done & {"Complete", "Failed"}:
            assert "Complete" in done, f"plain Job {name} failed: {status}"
            return time.monotonic() - started
        time.sleep(0.05)


#: Every point the two ranks write: JSONL loss and accuracy, TensorBoard loss.
POINTS = 2 * 3 * trainer.STEPS


def stored(web: Web, run_id: str) -> int:
    return sum(len(web.series(MemberKey(run_id, 1, f"rank-{rank}"), f"{source}-{rank}", tag))
               for rank in (0, 1) for source, tags in (("metrics", ("loss", "accuracy")),
                                                       ("tb", ("loss",))) for tag in tags)


def launched(web: Web, pause: float) -> dict[str, float]:
    """The same training launched through Tuneplane; the moments that matter, in seconds."""
    run_id = f"bench-kube-{uuid.uuid4().hex[:8]}"
    call(web, "POST", "/runs", {"run_id": run_id, "integration": ARTIFACT})
    started = time.monotonic()
    call(web, "POST", f"/runs/{run_id}/kubernetes-launches", {
        "indexes": 2, "image": TRAINING_IMAGE, "environment": {"TRAINER_PAUSE": str(pause)},
        "command": ["python3", "-c", Path(trainer.__file__).read_text()]})
    seen: dict[str, float] = {}
    while "finished" not in seen:
        (launch,) = call(web, "GET", f"/runs/{run_id}/launches")
        now = time.monotonic() - started
        if launch["job_id"]:
            seen.setdefault("Job made", now)
        if len(launch["collectors"]) == 2:
            seen.setdefault("sidecars redeemed", now)
        if "first point" not in seen and stored(web, run_id):
            seen["first point"] = now
        if launch["attempt_state"] not in ("pending", "running"):
            assert launch["attempt_state"] == "finished", launch
            seen["finished"] = now
        time.sleep(0.1)
    deadline = time.monotonic() + 60
    while (count := stored(web, run_id)) < POINTS:
        assert time.monotonic() < deadline, f"{run_id}: {count} of {POINTS} points stored"
        time.sleep(0.5)
    seen["stored"] = float(count)
    return seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--pause", type=float, default=0.3,
                        help="seconds between the training's five bursts (0.3)")
    args = parser.parse_args()
    rows: list[tuple[float, dict[str, float]]] = []
    with tempfile.TemporaryDirectory(prefix="tuneplane-bench-kube-") as work, \
            deployed(Path(work)) as release:
        web = release.web()
        for round_ in range(1, args.rounds + 1):
            plain = plain_job(release, args.pause)
            ours = launched(web, args.pause)
            rows.append((plain, ours))
            print(f"round {round_}: kubectl apply {plain:.2f} s; launched {ours['finished']:.2f}"
                  f" s (Job made {ours['Job made']:.2f}, sidecars redeemed "
                  f"{ours['sidecars redeemed']:.2f}, first point {ours['first point']:.2f}), "
                  f"{ours['stored']:.0f} points stored of {POINTS}", flush=True)
    median = statistics.median
    plain_m = median(p for p, _ in rows)
    ours_m = median(o["finished"] for _, o in rows)
    print(f"\nmedians of {len(rows)} rounds (2 pods x {trainer.STEPS} steps, JSONL and "
          "TensorBoard):")
    print(f"  kubectl apply -> Job Complete              {plain_m:6.2f} s")
    print(f"  tuneplane launch -> attempt finished       {ours_m:6.2f} s  "
          f"(+{ours_m - plain_m:.2f} s, {ours_m / plain_m:.2f}x)")
    for key in ("Job made", "sidecars redeemed", "first point"):
        print(f"  launch -> {key:<31} {median(o[key] for _, o in rows):6.2f} s")


if __name__ == "__main__":
    main()
