"""The Helm charts on the local cluster (scripts/kube): the project's images as the cluster
holds them, releases of deploy/helm/tuneplane-stores and deploy/helm/tuneplane in a
namespace of their own, and what a test asks of them.

The images are the ones compose builds from compose/Dockerfile (``tests.support.compose
build``), tagged ``tuneplane.local/tuneplane-<target>:<digest>``: the digest is of the six
images' ids, so a changed checkout is a new tag, never an old image under the same name.
``python -m tests.support.charts images`` tags them and imports them, with the stores'
images, into the cluster's containerd (scripts/test does, before pytest).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.environment import ROOT
from tests.support.kube import kubeconfig, kubectl

CHART = ROOT / "deploy" / "helm" / "tuneplane"
STORES_CHART = ROOT / "deploy" / "helm" / "tuneplane-stores"
REPOSITORY = "tuneplane.local/tuneplane"
#: Image target → the compose service whose image it is (compose project tuneplane-test).
SERVICES = {"ingest": "ingest", "control": "control", "projector": "projector", "web": "web",
            "exporter": "exporter", "admin": "init"}
STORE_IMAGES = ("postgres:15", "apache/kafka:4.1.1", "chrislusf/seaweedfs:4.48")


def docker(*args: str) -> str:
    done = subprocess.run(["docker", *args], capture_output=True, text=True, check=False,
                          timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"docker {' '.join(args[:3])}: {done.stderr.strip()[-500:]}")
    return done.stdout


def image_tag() -> str:
    """The tag of this checkout's images: a digest of the six compose images' ids."""
    ids = docker("image", "inspect", "--format", "{{.Id}}",
                 *(f"tuneplane-test-{service}" for service in SERVICES.values())).split()
    return hashlib.sha256(" ".join(ids).encode()).hexdigest()[:16]


def tagged() -> list[str]:
    """The compose images tagged for the chart (``image.repository``-<target>:<tag>); the
    tags of earlier checkouts removed (each holds its own layers: a disk's worth in a day)."""
    tag = image_tag()
    names = []
    for target, service in SERVICES.items():
        name = f"{REPOSITORY}-{target}:{tag}"
        docker("tag", f"tuneplane-test-{service}", name)
        names.append(name)
        earlier = [found for found in docker("image", "ls", "--format",
                                             "{{.Repository}}:{{.Tag}}",
                                             f"{REPOSITORY}-{target}").split()
                   if found != name]
        if earlier:  # best effort: a tag another run still uses is kept
            subprocess.run(["docker", "rmi", *earlier], capture_output=True, check=False,
                           timeout=600)
    return names


def retag_in_cluster(tag: str, new: str) -> None:
    """The release's images also under tag ``new`` in the cluster's containerd (the same
    content: an upgrade to it replaces every pod, as a new release does)."""
    data = Path(os.environ.get("TUNEPLANE_KUBE_DIR", ROOT / ".kube-local"))
    for target in SERVICES:
        done = subprocess.run(
            ["ctr", "--address", str(data / "containerd" / "containerd.sock"), "--namespace",
             "k8s.io", "images", "tag", "--force", f"{REPOSITORY}-{target}:{tag}",
             f"{REPOSITORY}-{target}:{new}"], capture_output=True, text=True, check=False)
        assert done.returncode == 0, f"ctr images tag: {done.stderr}"


def collector_image(work: Path) -> str:
    """The collector's sidecar image (deploy/collector-image) made from this checkout's
    x86_64 artifact, built by Docker and imported into the cluster as
    ``tuneplane-collector:<the artifact's digest>``; the digest."""
    from tests.support.collector_binary import HOST_TARGET, artifact

    made = artifact(HOST_TARGET, work)
    image_into_cluster(made, f"tuneplane-collector:{made.name}")
    return made.name


def image_into_cluster(directory: Path, name: str) -> None:
    """The collector image of the artifact ``directory`` (or of files laid out as one),
    built by Docker as ``name`` and imported into the cluster under that name."""
    docker("build", "--quiet", "-f", str(ROOT / "deploy" / "collector-image" / "Dockerfile"),
           "-t", name, str(directory))
    done = subprocess.run([str(ROOT / "scripts" / "kube"), "images", name], check=False,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"scripts/kube images {name}: {done.stderr[-2000:]}"


def helm(*args: str, seconds: float = 600) -> str:
    """``helm ARGS`` against the local cluster; the test fails with Helm's error otherwise."""
    binary = os.environ.get("TUNEPLANE_HELM", "")
    if not binary or not Path(binary).exists():
        pytest.fail("TUNEPLANE_HELM is not set: `export TUNEPLANE_HELM=$(scripts/helm)`",
                    pytrace=False)
    done = subprocess.run([binary, "--kubeconfig", kubeconfig(), *args], capture_output=True,
                          text=True, check=False, timeout=seconds)
    assert done.returncode == 0, f"helm {' '.join(args[:3])}: {done.stderr[-3000:]}"
    return done.stdout


def settings(values: dict[str, object]) -> list[str]:
    """``--set-json`` arguments for ``values`` (dotted key → value)."""
    args = []
    for key, value in values.items():
        args += ["--set-json", f"{key}={json.dumps(value)}"]
    return args


def exec_in(namespace: str, target: str, *command: str, seconds: float = 120) -> str:
    """``command`` run in a container of ``target`` (``deploy/NAME``, ``pod/NAME``)."""
    return kubectl("-n", namespace, "exec", target, "--", *command, seconds=seconds)


def consumer_lag(namespace: str, kafka_pod: str, group: str) -> dict[str, tuple[int, int]]:
    """The group's committed offset and the log's end, by partition of each topic, as
    Kafka's own kafka-consumer-groups.sh says in its pod."""
    said = exec_in(namespace, f"pod/{kafka_pod}", "/opt/kafka/bin/kafka-consumer-groups.sh",
                   "--bootstrap-server", "localhost:9092", "--describe", "--group", group)
    found = {}
    for line in said.splitlines():
        cells = line.split()
        if len(cells) >= 6 and cells[0] == group and cells[2].isdigit():
            committed = int(cells[3]) if cells[3].isdigit() else -1  # "-": none committed
            found[f"{cells[1]}/{cells[2]}"] = (committed, int(cells[4]))
    return found


def projected_to_end(namespace: str, kafka_pod: str, group: str, topic: str,
                     seconds: float = 180) -> None:
    """Returns once ``group`` has committed every partition of ``topic`` to the log's end:
    no row of a batch Kafka held at the call can arrive after it (the barrier of the "no
    extra row" checks; the producers are done by then)."""
    deadline = time.monotonic() + seconds
    while True:
        lag = {p: v for p, v in consumer_lag(namespace, kafka_pod, group).items()
               if p.startswith(f"{topic}/")}
        # A partition no batch went to has no committed offset (-1) and ends at 0.
        if lag and all(max(committed, 0) == end for committed, end in lag.values()):
            return
        assert time.monotonic() < deadline, \
            f"group {group} not at the end of {topic} after {seconds:.0f} s: {lag}"
        time.sleep(1)


def main(argv: list[str]) -> int:
    """``python -m tests.support.charts images``: the chart tests' images into the cluster."""
    if argv != ["images"]:
        print("usage: python -m tests.support.charts images", file=sys.stderr)
        return 2
    names = [*tagged(), *STORE_IMAGES, "python:3.11-slim"]
    done = subprocess.run([str(ROOT / "scripts" / "kube"), "images", *names], check=False)
    return done.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
