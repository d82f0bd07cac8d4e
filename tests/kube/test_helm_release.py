"""The Helm chart installed and used on the local cluster, as the operator guide says:
deploy/helm/tuneplane-stores (PostgreSQL, Kafka and SeaweedFS in the namespace), then
deploy/helm/tuneplane with ``gateway.enabled``, ``gateway.tlsSecret`` (a certificate made
outside the release, with its trust bundle) and NodePort Services, its migrations run as
the chart's hook Job. The host plays the execution host: a collector sends a TensorBoard
run and a JSONL run to the telemetry NodePort, and the curves are read back exactly over
the web Service. Then a projector pod and an ingest pod are force-deleted while a run is
sent: once Kafka's consumer group has committed past every batch (the barrier), every point
is stored once.

The images are compose's, imported by scripts/test (``python -m tests.support.charts
images``). Prints each step's time.
"""

from __future__ import annotations

import json
import subprocess
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from tests.kube.release import GROUP, TOPIC, Release
from tests.support.charts import CHART, exec_in, helm, image_tag, projected_to_end, retag_in_cluster
from tests.support.kube import kubectl
from tests.support.readback import Web, jsonl_truth, send_two_runs
from tuneplane.telemetry.v1.identity import MemberKey

#: The release's install (stores, migrations, nine pods starting on two cores) counts in the
#: first test's time.
pytestmark = [pytest.mark.usefixtures("kube_cluster", "docker_engine"), pytest.mark.timeout(900)]

def test_the_migration_hook_ran_and_the_gateway_serves_the_external_certificate(
        release: Release) -> None:
    history = json.loads(helm("history", "tuneplane", "-n", release.namespace, "-o", "json"))
    assert [h["status"] for h in history] == ["deployed"]
    # The hook Job ran `tuneplane-admin init` to completion, and was deleted then.
    events = json.loads(kubectl("-n", release.namespace, "get", "events", "-o", "json",
                                "--field-selector", "involvedObject.kind=Job"))["items"]
    assert [e["reason"] for e in events if e["involvedObject"]["name"] == "tuneplane-init"
            and e["reason"] == "Completed"] == ["Completed"], events
    assert kubectl("-n", release.namespace, "get", "jobs", "-o", "name").strip() == ""
    # The trust bundle handed to collectors is the external certificate's CA.
    assert release.admin("gateway-ca").strip() == (release.work / "ca.pem").read_text().strip()


#: Reads a pod's own metrics from inside it (the images have Python, no curl).
SCRAPE = ("import sys, urllib.request; print(urllib.request.urlopen("
          "f'http://127.0.0.1:{sys.argv[1]}/metrics', timeout=5).read().decode())")


def test_every_pod_of_the_release_serves_its_metrics_on_the_charts_port(
        release: Release) -> None:
    ports = yaml.safe_load((CHART / "values.yaml").read_text())["metrics"]["ports"]
    for component, port in ports.items():
        pods = release.pods(component)
        assert pods, f"no {component} pod in the release"
        for pod in pods:
            said = exec_in(release.namespace, f"pod/{pod}", "python", "-c", SCRAPE, str(port))
            assert f"tuneplane_{component}_" in said, (pod, said[:300])


def force_delete(release: Release, component: str) -> None:
    """One pod of ``component`` deleted at once (no grace: its process is killed), and
    checked gone."""
    pods = release.pods(component)
    name = sorted(pods)[0]
    kubectl("-n", release.namespace, "delete", "pod", name, "--grace-period=0", "--force")
    deadline = time.monotonic() + 60
    while pods[name] in release.pods(component).values():
        assert time.monotonic() < deadline, f"pod {name} still there 60 s after its delete"
        time.sleep(0.2)


def test_runs_sent_through_the_node_port_read_back_exactly_through_pod_deletions(
        release: Release, tmp_path: Path) -> None:
    web = release.web()
    prefix = f"helm-{uuid.uuid4().hex[:6]}"
    started = time.monotonic()
    send_two_runs(release.send, web, prefix, tmp_path)
    release.timed("two runs sent and read back", started)

    # A run of 300,000 lines in batches of 500; once its first points are stored, a
    # projector pod and an ingest pod are force-deleted while the collector still sends.
    started = time.monotonic()

    def delete_pods() -> None:
        force_delete(release, "projector")
        force_delete(release, "ingest")

    sent_exactly_through(release, web, MemberKey(f"{prefix}-chaos", 1, "rank-0"), tmp_path,
                         delete_pods, "the pods were deleted")
    release.timed("300,000 lines through two force-deleted pods", started)


def sent_exactly_through(release: Release, web: Web, member: MemberKey, work: Path,
                         fault: Callable[[], None], what: str) -> None:
    """300,000 lines sent by a collector in batches of 500; ``fault`` is done once the
    first points are stored, and must end while the collector still sends. Past the
    consumer group's barrier, every point is stored once."""
    truth = jsonl_truth(work / f"{member.run_id}.jsonl", range(300_000))
    said = work / f"{member.run_id}.log"
    with said.open("w") as log:
        collector = subprocess.Popen(
            [*release.send(member, {"train": work / f"{member.run_id}.jsonl"},
                           "--max-batch-points", "500"), "--exit-when-idle"],
            stdout=subprocess.DEVNULL, stderr=log)
    try:
        deadline = time.monotonic() + 120
        while not web.series(member, "train", "loss"):
            assert time.monotonic() < deadline, "no point of the run stored within 120 s: " + \
                said.read_text()[-3000:]
            time.sleep(0.05)
        assert collector.poll() is None, f"the run was sent before {what}"
        fault()
        collector.wait(timeout=600)
        errors = said.read_text()
        assert collector.returncode == 0, errors[-3000:]
        assert " 0 problems, 0 batches not delivered" in errors, errors[-3000:]
    finally:
        if collector.poll() is None:
            collector.kill()
        collector.wait()
    projected_to_end(release.namespace, "stores-kafka-0", GROUP, TOPIC)
    web.wait_exact(member, "train", truth, seconds=30)


def images_running(release: Release) -> set[str]:
    """The image tags of the release's serving pods. A pod of a Job (a lifecycle CronJob's
    run, the migration hook) is left out: one that began before an upgrade finishes on the
    image it began with, as it should."""
    pods = json.loads(kubectl("-n", release.namespace, "get", "pods", "-l",
                              "app.kubernetes.io/name=tuneplane", "-o", "json"))["items"]
    return {c["image"].rsplit(":", 1)[1] for p in pods
            if p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")
            and not any(o.get("kind") == "Job" for o in p["metadata"].get("ownerReferences", []))
            for c in p["spec"]["containers"]}


def test_an_upgrade_while_a_run_is_sent_loses_nothing_and_rolls_back(
        release: Release, tmp_path: Path) -> None:
    """``helm upgrade`` to another image tag (every pod replaced, the migration hook run
    again) while a run is sent; then ``helm rollback`` to the first revision, and a run sent
    after it reads back too."""
    web = release.web()
    prefix = f"upgrade-{uuid.uuid4().hex[:6]}"
    tag = image_tag()
    retag_in_cluster(tag, f"{tag}-next")
    started = time.monotonic()

    def upgrade() -> None:
        helm("upgrade", "tuneplane", str(CHART), "-n", release.namespace, "--reuse-values",
             "--set", f"image.tag={tag}-next", "--wait", "--timeout", "10m", seconds=900)

    sent_exactly_through(release, web, MemberKey(f"{prefix}-during", 1, "rank-0"), tmp_path,
                         upgrade, "the upgrade began")
    release.timed("300,000 lines through an upgrade", started)
    assert images_running(release) == {f"{tag}-next"}
    started = time.monotonic()
    helm("rollback", "tuneplane", "1", "-n", release.namespace, "--wait", "--timeout", "10m",
         seconds=900)
    release.timed("rollback", started)
    history = json.loads(helm("history", "tuneplane", "-n", release.namespace, "-o", "json"))
    assert [(h["revision"], h["status"]) for h in history] == [
        (1, "superseded"), (2, "superseded"), (3, "deployed")]
    deadline = time.monotonic() + 120
    while images_running(release) != {tag}:  # the upgrade's pods still terminating
        assert time.monotonic() < deadline, images_running(release)
        time.sleep(0.5)
    send_two_runs(release.send, web, f"{prefix}-after", tmp_path)
