"""Spool grants of Kubernetes launches on the local cluster: a ``storageClass`` grant (a
local class of ``local`` volumes on the node, bound when the pod is scheduled) holds each
pod's spool, and both ranks arrive exactly; a ``hostPath`` grant that turns out to be a
network filesystem (SeaweedFS's FUSE client on the test stack's filer, a real one, mounted
on the node where the grant's directory is) is refused by the sidecar, with no fallback."""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from scripts.stack.common import ports
from scripts.stack.s3 import weed_binary
from tests.kube import trainer
from tests.kube.launching import ARTIFACT, TRAINING_IMAGE, call, launched, shown
from tests.kube.release import (
    GROUP,
    LOCAL_CLASS_PROJECT,
    NETWORK_GRANT_PROJECT,
    TOPIC,
    Release,
    local_class,
    network_grant,
)
from tests.support.charts import projected_to_end
from tests.support.kube import kubectl
from tuneplane.telemetry.v1.identity import MemberKey

# ``endpoints``: the test stack (scripts/services) whose SeaweedFS filer is mounted.
pytestmark = [pytest.mark.usefixtures("kube_cluster", "docker_engine", "endpoints"),
              pytest.mark.timeout(900)]


@contextlib.contextmanager
def local_volumes(storage_class: str, count: int, root: Path) -> Iterator[list[Path]]:
    """The StorageClass of ``local`` volumes (no provisioner, bound when a pod is scheduled,
    as a cluster's node-local disks are offered) and ``count`` volumes of it, each a
    directory below ``root`` on the node; all deleted afterwards."""
    node = kubectl("get", "nodes", "-o", "jsonpath={.items[0].metadata.name}").strip()
    directories = [root / f"volume-{i}" for i in range(count)]
    made = [{"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
             "metadata": {"name": storage_class},
             "provisioner": "kubernetes.io/no-provisioner",
             "volumeBindingMode": "WaitForFirstConsumer"}]
    for i, directory in enumerate(directories):
        directory.mkdir(parents=True)
        made.append({"apiVersion": "v1", "kind": "PersistentVolume",
                     "metadata": {"name": f"{storage_class}-{i}"},
                     "spec": {"capacity": {"storage": "64Mi"}, "accessModes": ["ReadWriteOnce"],
                              "persistentVolumeReclaimPolicy": "Retain",
                              "storageClassName": storage_class,
                              "local": {"path": str(directory)},
                              "nodeAffinity": {"required": {"nodeSelectorTerms": [{
                                  "matchExpressions": [{"key": "kubernetes.io/hostname",
                                                        "operator": "In",
                                                        "values": [node]}]}]}}}})
    kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List",
                                                 "items": made}))
    try:
        yield directories
    finally:  # the volumes' claims went with their pods (the caller deleted them)
        kubectl("delete", "pv", *(f"{storage_class}-{i}" for i in range(count)),
                "--ignore-not-found", "--timeout=120s", seconds=180)
        kubectl("delete", "storageclass", storage_class, "--ignore-not-found")
        shutil.rmtree(root, ignore_errors=True)


def test_a_local_storage_class_grant_holds_each_pods_spool_and_both_ranks_arrive_exactly(
        release: Release, tmp_path: Path) -> None:
    """The project's grant is ``storageClass:<class>:64Mi``: each pod's spool is a generic
    ephemeral volume, bound to a local volume of the node when the pod is scheduled; the
    Job finishes, each sidecar reports nothing left, both members' curves arrive exactly,
    and the spools were where the grant put them (the local volumes' directories)."""
    web = release.web()
    run_id = f"kube-local-{uuid.uuid4().hex[:8]}"
    call(web, "POST", "/projects", {"name": LOCAL_CLASS_PROJECT})
    call(web, "POST", "/runs", {"run_id": run_id, "project": LOCAL_CLASS_PROJECT,
                                "integration": ARTIFACT})
    with local_volumes(local_class(release.namespace), 2, tmp_path / "volumes") as volumes:
        queued = call(web, "POST", f"/runs/{run_id}/kubernetes-launches", {
            "indexes": 2, "image": TRAINING_IMAGE,
            "command": ["python3", "-c", Path(trainer.__file__).read_text()]})
        try:
            launch = launched(web, run_id)
            held = [p.relative_to(v) for v in volumes for p in v.rglob("*")]
        finally:  # its pods, and their volumes' claims with them
            kubectl("-n", release.jobs_namespace, "delete", "job", "--cascade=foreground",
                    f"tuneplane-launch-{queued['kubernetes_launch']}", "--timeout=120s",
                    seconds=180)
    assert (launch["attempt_state"], launch["job_state"]) == ("finished", "COMPLETED"), \
        shown(launch)
    for collector in launch["collectors"]:
        assert (collector["refused"], collector["reported"], collector["undelivered"]) == (
            None, True, 0), collector
    spools = {p.parts[1:4] for p in held if len(p.parts) > 4 and p.parts[0] == "spools"}
    assert spools >= {(run_id, "1", "rank-0"), (run_id, "1", "rank-1")}, held
    projected_to_end(release.namespace, "stores-kafka-0", GROUP, TOPIC)
    for rank in (0, 1):
        for source, truth in trainer.truth(rank).items():
            web.wait_exact(MemberKey(run_id, 1, f"rank-{rank}"), f"{source}-{rank}", truth,
                           seconds=0)


@contextlib.contextmanager
def network_filesystem(where: Path, log_file: Path) -> Iterator[str]:
    """A real network filesystem mounted at ``where``: SeaweedFS's FUSE client on the test
    stack's filer (``weed mount``, its output in ``log_file``); the mount table's type of
    it. Unmounted, and ``where`` removed, afterwards."""
    where.mkdir(parents=True, exist_ok=True)
    known = ports()
    log = log_file.open("w")
    mount = subprocess.Popen(
        [str(weed_binary()), "mount", f"-filer=127.0.0.1:{known['weed_filer']}."
         f"{known['weed_filer_grpc']}", f"-dir={where}", "-dirAutoCreate", "-allowOthers",
         f"-filer.path=/kube-network-grant-{uuid.uuid4().hex[:8]}"],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            for line in Path("/proc/self/mountinfo").read_text().splitlines():
                fields = line.split(" - ")
                if fields[0].split()[4] == str(where):
                    yield fields[1].split()[0]
                    return
            assert mount.poll() is None, log_file.read_text()
            assert time.monotonic() < deadline, "weed mount never mounted"
            time.sleep(0.2)
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False, capture_output=True)
        mount.terminate()
        try:
            mount.wait(timeout=30)
        except subprocess.TimeoutExpired:
            mount.kill()
            mount.wait()
        log.close()
        with contextlib.suppress(OSError):
            where.rmdir()


def test_a_spool_grant_on_a_network_filesystem_is_refused_with_its_reason(
        release: Release, tmp_path: Path) -> None:
    """The project's grant is a node directory (``hostPath``) with a network filesystem
    mounted on it: the sidecar judges the spool from its mount table before it redeems,
    refuses naming the filesystem, the attempt fails saying so, and nothing falls back to
    the working volume: no training ran."""
    web = release.web()
    run_id = f"kube-network-{uuid.uuid4().hex[:8]}"
    artifact = {"version": 1, "sources": [
        {"id": "metrics-0", "kind": "jsonl", "path": "rank-0/metrics.jsonl", "owner": "rank-0"}]}
    call(web, "POST", "/projects", {"name": NETWORK_GRANT_PROJECT})
    call(web, "POST", "/runs", {"run_id": run_id, "project": NETWORK_GRANT_PROJECT,
                                "integration": artifact})
    with network_filesystem(network_grant(release.namespace), tmp_path / "mount.log") as mounted:
        assert mounted == "fuse.seaweedfs"
        queued = call(web, "POST", f"/runs/{run_id}/kubernetes-launches", {
            "indexes": 1, "image": TRAINING_IMAGE,
            "command": ["python3", "-c", Path(trainer.__file__).read_text()]})
        launch = launched(web, run_id)
    assert (launch["attempt_state"], launch["job_state"]) == ("failed", "FAILED"), shown(launch)
    assert len(launch["collectors"]) == 1, shown(launch)
    (collector,) = launch["collectors"]
    assert "spool root refused: spool directory /var/spool/tuneplane is on network FUSE " \
           "(seaweedfs) (fuse.seaweedfs" in collector["refused"], collector
    assert "network FUSE (seaweedfs)" in launch["detail"], shown(launch)
    deadline = time.monotonic() + 60  # the refused launch's Job is deleted
    while kubectl("-n", release.jobs_namespace, "get", "job", "-l",
                  f"tuneplane.dev/launch={queued['kubernetes_launch']}", "-o", "name").strip():
        assert time.monotonic() < deadline, "the refused launch's Job was not deleted"
        time.sleep(0.5)
    assert web.series(MemberKey(run_id, 1, "rank-0"), "metrics-0", "loss") == []
