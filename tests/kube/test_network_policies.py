"""The release's NetworkPolicies, enforced on the local cluster by kube-network-policies
(scripts/kube runs it; the bridge CNI plugin enforces none): a pod outside the set the
chart allows cannot open a connection to PostgreSQL, though the same pod reaches the web
Service (which takes any peer), so it is the policy that stops it; the release's admin pod,
which is in the set, connects."""

from __future__ import annotations

import json

import pytest

from tests.kube.release import Release
from tests.support.charts import REPOSITORY, exec_in, image_tag
from tests.support.kube import kubectl, kubectl_refused

pytestmark = [pytest.mark.usefixtures("kube_cluster", "docker_engine"), pytest.mark.timeout(900)]

CONNECT = ("import socket, sys; socket.create_connection((sys.argv[1], int(sys.argv[2])), "
           "timeout=3); print('connected')")


def connect(namespace: str, target: str, host: str, port: int) -> str:
    return exec_in(namespace, target, "python", "-c", CONNECT, host, str(port)).strip()


def test_a_pod_outside_the_allowed_set_cannot_reach_postgresql(release: Release) -> None:
    namespace = release.namespace
    policy = json.loads(kubectl("-n", namespace, "get", "networkpolicy",
                                "tuneplane-postgresql", "-o", "json"))
    assert policy["spec"]["podSelector"]["matchLabels"]["app.kubernetes.io/component"] == \
        "postgresql"
    kubectl("-n", namespace, "run", "intruder", f"--image={REPOSITORY}-admin:{image_tag()}",
            "--image-pull-policy=Never", "--restart=Never", "--labels=app=intruder",
            "--command", "--", "sleep", "3600")
    try:
        kubectl("-n", namespace, "wait", "pod/intruder", "--for=condition=Ready",
                "--timeout=120s", seconds=150)
        postgres = f"stores-postgresql.{namespace}.svc.cluster.local"
        said = kubectl_refused("-n", namespace, "exec", "pod/intruder", "--", "python", "-c",
                               CONNECT, postgres, "5432")
        assert "timed out" in said, said  # dropped, not refused: the policy's doing
        web = f"tuneplane-web.{namespace}.svc.cluster.local"
        assert connect(namespace, "pod/intruder", web, 8080) == "connected"
        assert connect(namespace, "deploy/tuneplane-admin", postgres, 5432) == "connected"
    finally:
        kubectl("-n", namespace, "delete", "pod", "intruder", "--grace-period=0", "--force",
                "--ignore-not-found")
