"""The local Kubernetes cluster scripts/kube starts (the one the chart's tests use): a pod
runs an image imported from Docker, with the sandbox image built here, and answers through
a ClusterIP Service and a NodePort from the host; its logs and exec reach it through the
kubelet; from inside, the cluster's DNS names the API's Service; deleted, it is gone."""

from __future__ import annotations

import json
import time
import urllib.request
import uuid

import pytest

from tests.support.kube import kubectl, node_ip, wait_for_pod

pytestmark = pytest.mark.usefixtures("kube_cluster")

SERVER = ("import http.server, os\n"
          "class H(http.server.BaseHTTPRequestHandler):\n"
          "    def do_GET(self):\n"
          "        body = os.environ['HOSTNAME'].encode()\n"
          "        self.send_response(200); self.end_headers(); self.wfile.write(body)\n"
          "    def log_message(self, *a): print('served', flush=True)\n"
          "http.server.HTTPServer(('', 8080), H).serve_forever()\n")


#: Run in the pod: the API's version, through the `kubernetes` Service by its name (the
#: cluster's DNS, and the name the API server's certificate carries), with the pod's token.
ASK_API = ("import ssl, urllib.request\n"
           "place = '/var/run/secrets/kubernetes.io/serviceaccount/'\n"
           "token = open(place + 'token').read()\n"
           "trust = ssl.create_default_context(cafile=place + 'ca.crt')\n"
           "asked = urllib.request.Request('https://kubernetes.default.svc/version',\n"
           "                               headers={'Authorization': 'Bearer ' + token})\n"
           "print(urllib.request.urlopen(asked, context=trust, timeout=10).read().decode())\n")


def answered(url: str, seconds: float = 60) -> str:
    """What ``url`` answers, once kube-proxy has its rules for the Service (a moment after
    the pod is Ready)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as reply:
                return str(reply.read().decode())
        except OSError:
            assert time.monotonic() < deadline, f"{url} did not answer in {seconds:.0f} s"
            time.sleep(0.5)


def test_a_pod_answers_through_its_services_and_reaches_the_api() -> None:
    name = f"echo-{uuid.uuid4().hex[:8]}"
    manifest = {"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": name}},
         "spec": {"containers": [{
             "name": "server", "image": "python:3.11-slim", "imagePullPolicy": "Never",
             "command": ["python3", "-c", SERVER], "ports": [{"containerPort": 8080}]}]}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
         "spec": {"type": "NodePort", "selector": {"app": name},
                  "ports": [{"port": 80, "targetPort": 8080}]}}]}
    kubectl("apply", "-f", "-", input=json.dumps(manifest))
    try:
        wait_for_pod(name)
        service = json.loads(kubectl("get", "service", name, "-o", "json"))
        cluster_ip, node_port = (service["spec"]["clusterIP"],
                                 service["spec"]["ports"][0]["nodePort"])
        for url in (f"http://{cluster_ip}/", f"http://{node_ip()}:{node_port}/"):
            assert answered(url) == name, url
        assert "served" in kubectl("logs", name)
        # From inside the pod: the API through the `kubernetes` Service, by name, with its
        # token.
        said = kubectl("exec", name, "--", "python3", "-c", ASK_API)
        assert json.loads(said)["gitVersion"] == "v1.37.2"
        # And its own Service by name, from the pod network (through the host's FORWARD
        # chain, which Docker's engine sets to drop).
        ask = ("import urllib.request\nprint(urllib.request.urlopen("
               f"'http://{name}.default.svc.cluster.local/', timeout=10).read().decode())")
        assert kubectl("exec", name, "--", "python3", "-c", ask).strip() == name
    finally:
        kubectl("delete", "-f", "-", "--wait=true", "--grace-period=1", input=json.dumps(manifest))
    assert kubectl("get", "pods", "-l", f"app={name}", "-o", "name").strip() == ""
