"""The Helm chart, rendered by `helm template` (Helm from scripts/helm): defaults, and the
gateway with an externally managed certificate; ports, secret mounts and settings; no
password with a default, none in a pod spec; NetworkPolicies; web over TLS; metrics ports,
scrape annotations and PodMonitors."""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.deployables import IMAGES, required
from tests.support.environment import ROOT
from tuneplane.contract.settings import describe

CHART = ROOT / "deploy" / "helm" / "tuneplane"
REPOSITORY = yaml.safe_load((CHART / "values.yaml").read_text())["image"]["repository"]
SHARED = {"TUNEPLANE_SECRET_ENC_KEY", "TUNEPLANE_WEB_JWT_SECRET"}
PASSWORD = "a-password-given"
DATABASE_URL = f"postgresql://tuneplane:{PASSWORD}@postgres:5432/tuneplane"
#: The one value the chart cannot do without (it has no default password).
GIVEN = (f"database.url={DATABASE_URL}",)
POD_LABELS = {"app.kubernetes.io/name": "tuneplane", "app.kubernetes.io/instance": "rel"}
#: Each serving component's metrics port: compose's, which the chart's defaults are.
METRICS = {name: int(service["environment"][f"TUNEPLANE_{name.upper()}_METRICS_PORT"])
           for name, service in yaml.safe_load(
               (ROOT / "compose" / "compose.yaml").read_text())["services"].items()
           if f"TUNEPLANE_{name.upper()}_METRICS_PORT" in service.get("environment", {})}
#: Who reaches them by default: the pods of the namespace named monitoring.
SCRAPERS = [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}]


def helm() -> str:
    binary = os.environ.get("TUNEPLANE_HELM", "")
    if not binary or not Path(binary).exists():
        pytest.fail("TUNEPLANE_HELM is not set: `export TUNEPLANE_HELM=$(scripts/helm)`",
                    pytrace=False)
    return binary


def template(*settings: str, as_json: tuple[str, ...] = ()
             ) -> subprocess.CompletedProcess[str]:
    """``helm template`` with ``--set`` each of ``settings``, ``--set-json`` each of
    ``as_json``."""
    args = [helm(), "template", "rel", str(CHART), "--namespace", "ml"]
    for setting in settings:
        args += ["--set", setting]
    for setting in as_json:
        args += ["--set-json", setting]
    return subprocess.run(args, capture_output=True, text=True, check=False, timeout=120)


def render(*settings: str, given: tuple[str, ...] = GIVEN,
           as_json: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    done = template(*given, *settings, as_json=as_json)
    assert done.returncode == 0, done.stderr
    return [d for d in yaml.safe_load_all(done.stdout) if d]


def find(documents: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    for document in documents:
        if document["kind"] == kind and document["metadata"]["name"] == name:
            return document
    present = [(d["kind"], d["metadata"]["name"]) for d in documents]
    raise AssertionError(f"no {kind} {name} in {present}")


def pod_template(workload: dict[str, Any]) -> dict[str, Any]:
    """A Deployment's, Job's or CronJob's pod template."""
    spec = workload["spec"]
    if workload["kind"] == "CronJob":
        spec = spec["jobTemplate"]["spec"]
    return dict(spec["template"])


def container(workload: dict[str, Any]) -> dict[str, Any]:
    (only,) = pod_template(workload)["spec"]["containers"]
    return dict(only)


def env(c: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in c["env"]}


@pytest.mark.parametrize("settings", [(), ("gateway.enabled=true",),
                                      ("gateway.enabled=true", "gateway.tlsSecret=gw-tls")])
def test_every_workload_sets_what_its_deployable_requires(settings: tuple[str, ...]) -> None:
    checked = set()
    for document in render(*settings):
        if document["kind"] not in WORKLOADS:
            continue
        c = container(document)
        image = c["image"].rsplit(":", 1)[0].removeprefix(REPOSITORY + "-")
        present = {name for name, value in env(c).items() if value}
        missing = required(image, c.get("args", []), c.get("command")) - present
        assert not missing, f"{document['metadata']['name']} ({image}) lacks {sorted(missing)}"
        checked.add(image)
    assert checked == set(IMAGES) - (set() if settings else {"ingest", "control"})


def test_defaults_render_the_workers_and_the_migration_job_without_the_gateway() -> None:
    documents = render()
    kinds = {(d["kind"], d["metadata"]["name"]) for d in documents}
    assert ("Deployment", "rel-tuneplane-ingest") not in kinds
    assert ("Deployment", "rel-tuneplane-projector") in kinds
    job = find(documents, "Job", "rel-tuneplane-init")
    assert job["metadata"]["annotations"]["helm.sh/hook"] == "pre-install,pre-upgrade"
    assert container(job)["args"] == ["init"]
    secret = find(documents, "Secret", "rel-tuneplane-secrets")
    assert set(secret["data"]) == SHARED
    for name in ("projector", "web", "exporter"):
        deployment = find(documents, "Deployment", f"rel-tuneplane-{name}")
        spec = deployment["spec"]["template"]["spec"]
        assert spec["securityContext"]["runAsNonRoot"] is True
        values = env(container(deployment))
        for key in SHARED:  # every replica reads the same two secrets
            assert values[key] == {"secretKeyRef": {"name": "rel-tuneplane-secrets",
                                                    "key": key}}
    assert find(documents, "Deployment", "rel-tuneplane-projector")["spec"]["replicas"] == 2
    scaled = find(render("projector.replicas=5"), "Deployment", "rel-tuneplane-projector")
    assert scaled["spec"]["replicas"] == 5


def test_the_gateway_with_an_external_certificate_exposes_both_tls_ports() -> None:
    documents = render("gateway.enabled=true", "gateway.tlsSecret=gw-tls",
                       "secrets.existingSecret=shared", "gateway.route.enabled=true",
                       "gateway.route.gatewayName=edge", "database.existingSecret=db",
                       given=())
    for component, port, name in (("ingest", 8444, "telemetry"),
                                  ("control", 8443, "node-control")):
        deployment = find(documents, "Deployment", f"rel-tuneplane-{component}")
        c = container(deployment)
        assert c["ports"] == [{"name": name, "containerPort": port, "protocol": "TCP"},
                              {"name": "metrics", "containerPort": METRICS[component],
                               "protocol": "TCP"}]
        assert "--certificate=/etc/tuneplane/tls/tls.crt" in c["args"]
        assert "--private-key=/etc/tuneplane/tls/tls.key" in c["args"]
        assert c["volumeMounts"] == [{"name": "tls", "mountPath": "/etc/tuneplane/tls",
                                      "readOnly": True}]
        volumes = deployment["spec"]["template"]["spec"]["volumes"]
        assert volumes == [{"name": "tls", "secret": {"secretName": "gw-tls"}}]
        values = env(c)
        assert values["TUNEPLANE_TELEMETRY_TRUST_BUNDLE"] == "/etc/tuneplane/tls/ca.crt"
        for key in SHARED:
            assert values[key] == {"secretKeyRef": {"name": "shared", "key": key}}
        assert values["TUNEPLANE_DATABASE_URL"] == {"secretKeyRef": {"name": "db", "key": "url"}}
        service = find(documents, "Service", f"rel-tuneplane-{component}")
        assert service["spec"]["ports"] == [{"name": name, "port": port, "targetPort": port,
                                             "protocol": "TCP", "appProtocol": "tls"}]
        assert service["spec"]["selector"]["app.kubernetes.io/component"] == component
        route = find(documents, "TLSRoute", f"rel-tuneplane-{component}")
        assert route["spec"]["parentRefs"][0]["name"] == "edge"
        assert route["spec"]["rules"][0]["backendRefs"][0]["port"] == port
    control = env(container(find(documents, "Deployment", "rel-tuneplane-control")))
    assert {"TUNEPLANE_TELEMETRY_TARGET", "TUNEPLANE_TELEMETRY_SPOOL_ROOT",
            "TUNEPLANE_TELEMETRY_COLLECTOR_ARTIFACT"} <= set(control)
    # The existing ones are used; the chart makes only the admission webhook's certificate.
    assert [d["metadata"]["name"] for d in documents if d["kind"] == "Secret"] == [
        "rel-tuneplane-destinations-webhook"]


def test_kubernetes_launches_give_control_a_role_in_each_launch_namespace_and_no_more(
) -> None:
    documents = render("gateway.enabled=true", "gateway.hostname=gw.example",
                       "gateway.control.kubernetesLaunches.enabled=true",
                       "gateway.control.kubernetesLaunches.namespaces={vision=team-a,team-b}",
                       "gateway.control.kubernetesLaunches.spool=hostPath:/scratch/tp")
    control = find(documents, "Deployment", "rel-tuneplane-control")
    args = container(control)["args"]
    assert {"--kubernetes", "--kubernetes-control-address=rel-tuneplane-control.ml.svc:8443",
            "--kubernetes-control-server-name=gw.example", "--kubernetes-namespace=vision=team-a",
            "--kubernetes-namespace=team-b", "--kubernetes-spool=hostPath:/scratch/tp",
            "--workload-token-ttl=900"} <= set(args)
    assert control["spec"]["template"]["spec"]["serviceAccountName"] == "rel-tuneplane-control"
    ingest = find(documents, "Deployment", "rel-tuneplane-ingest")["spec"]["template"]["spec"]
    assert ingest["automountServiceAccountToken"] is False
    for namespace in ("team-a", "team-b"):
        role = next(d for d in documents if d["kind"] == "Role"
                    and d["metadata"].get("namespace") == namespace)
        rules = {(r["apiGroups"][0], resource): set(r["verbs"]) for r in role["rules"]
                 for resource in r["resources"]}
        assert rules[("", "secrets")] == {"create"}  # never read
        assert rules[("", "pods")] == rules[("", "events")] == {"list"}
        assert "delete" in rules[("batch", "jobs")]
        binding = next(d for d in documents if d["kind"] == "RoleBinding"
                       and d["metadata"].get("namespace") == namespace)
        assert binding["subjects"] == [{"kind": "ServiceAccount",
                                        "name": "rel-tuneplane-control", "namespace": "ml"}]
    per_project = render("gateway.enabled=true", "gateway.control.kubernetesLaunches.enabled=true",
                         "gateway.control.kubernetesLaunches.namespaces={team-a}",
                         "gateway.control.kubernetesLaunches.spool={nlp=hostPath:/scratch,emptyDir}",
                         "gateway.control.kubernetesLaunches.workdirSizeLimit=20Gi")
    args = container(find(per_project, "Deployment", "rel-tuneplane-control"))["args"]
    assert [a for a in args if a.startswith("--kubernetes-spool")] == [
        "--kubernetes-spool=nlp=hostPath:/scratch", "--kubernetes-spool=emptyDir"]
    assert "--kubernetes-workdir-limit=20Gi" in args
    plain = render("gateway.enabled=true")
    assert not [d for d in plain if d["kind"] in ("Role", "RoleBinding")
                and d["metadata"]["name"].endswith("-launches")]
    refused = template(*GIVEN, "gateway.enabled=true",
                       "gateway.control.kubernetesLaunches.enabled=true")
    assert refused.returncode != 0
    assert "namespaces" in refused.stderr


def test_without_an_external_certificate_the_gateway_uses_the_shared_identity() -> None:
    documents = render("gateway.enabled=true")
    c = container(find(documents, "Deployment", "rel-tuneplane-ingest"))
    assert not [a for a in c["args"] if a.startswith("--certificate")]
    assert "volumeMounts" not in c
    assert "TUNEPLANE_TELEMETRY_TRUST_BUNDLE" not in env(c)


def test_exporter_sink_secrets_mount_one_directory_per_sink() -> None:
    documents = render("exporter.sinkSecrets.mimir=mimir-credentials")
    deployment = find(documents, "Deployment", "rel-tuneplane-exporter")
    assert container(deployment)["volumeMounts"] == [
        {"name": "sink-mimir", "mountPath": "/etc/tuneplane/telemetry/mimir",
         "readOnly": True}]
    assert deployment["spec"]["template"]["spec"]["volumes"] == [
        {"name": "sink-mimir", "secret": {"secretName": "mimir-credentials"}}]


def test_the_release_takes_only_telemetry_destinations_labelled_for_it() -> None:
    """The controller, its webhook and the exporter agree on the release's label value and
    on the prefix of its sinks' Secrets, which none of the release's own Secrets has."""
    documents = render()
    (hook,) = find(documents, "ValidatingWebhookConfiguration",
                   "rel-tuneplane-destinations")["webhooks"]
    assert hook["objectSelector"] == {"matchLabels": {"tuneplane.dev/release": "ml.rel"}}
    for name in ("rel-tuneplane-destinations", "rel-tuneplane-exporter"):
        values = env(container(find(documents, "Deployment", name)))
        assert values["TUNEPLANE_DESTINATIONS_RELEASE"] == "ml.rel"
        assert values["TUNEPLANE_SINK_SECRET_PREFIX"] == "tuneplane-sink-"
    given = render("destinations.release=rel-a", "destinations.sinkSecretPrefix=sink-")
    (hook,) = find(given, "ValidatingWebhookConfiguration",
                   "rel-tuneplane-destinations")["webhooks"]
    assert hook["objectSelector"] == {"matchLabels": {"tuneplane.dev/release": "rel-a"}}
    for settings, words in (
            (("destinations.sinkSecretPrefix=rel-",),
             'the release\'s Secret "rel-tuneplane-secrets" starts with "rel-"'),
            (("destinations.sinkSecretPrefix=db-", "database.existingSecret=db-url"),
             'the release\'s Secret "db-url" starts with "db-"'),
            (("destinations.release=" + "r" * 64,), "is not a label value")):
        refused = template(*GIVEN, *settings)
        assert refused.returncode != 0
        assert words in refused.stderr, refused.stderr


def lint(*settings: str) -> subprocess.CompletedProcess[str]:
    args = [helm(), "lint", "--strict", str(CHART)]
    for setting in settings:
        args += ["--set", setting]
    return subprocess.run(args, capture_output=True, text=True, check=False, timeout=120)


def test_the_chart_lints_clean() -> None:
    for settings in ((), ("gateway.enabled=true", "gateway.tlsSecret=gw"),
                     ("web.tlsSecret=web-tls", "networkPolicy.stores.kafka.podSelector.app=kafka",
                      "networkPolicy.webFrom[0].namespaceSelector.matchLabels.edge=yes"),
                     ("gateway.enabled=true", "metrics.podMonitor.enabled=true",
                      "metrics.podMonitor.interval=30s"),
                     ("gateway.enabled=true", "metrics.enabled=false")):
        done = lint(*GIVEN, *settings)
        assert done.returncode == 0, done.stdout + done.stderr


REFUSAL = "set database.existingSecret (a Secret with key url) or database.url: " \
          "the chart has no default database password"


def test_without_a_database_the_chart_refuses_to_render_saying_what_to_set() -> None:
    done = template()
    assert done.returncode != 0
    assert REFUSAL in done.stderr
    assert REFUSAL in (linted := lint()).stdout + linted.stderr
    assert template("database.existingSecret=db").returncode == 0
    assert not [v for v in strings(yaml.safe_load((CHART / "values.yaml").read_text()))
                if re.search(r"://[^/@\s]*:[^/@\s]*@", v)], "a URL with a password in values"


def strings(value: Any) -> list[str]:
    """Every string in a parsed YAML document."""
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return [value] if isinstance(value, str) else []


def decoded(secret: dict[str, Any]) -> dict[str, str]:
    return {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}


WORKLOADS = ("Deployment", "Job", "CronJob")


def workloads(documents: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [d for d in documents if d["kind"] in WORKLOADS]


def test_no_password_or_key_is_a_default_or_a_value_in_a_pod_spec() -> None:
    """The database URL lives in a Secret, the shared keys are random, and every container
    reads all of them from Secrets."""
    documents = render("gateway.enabled=true")
    assert decoded(find(documents, "Secret", "rel-tuneplane-database")) == {
        "url": DATABASE_URL}
    for document in workloads(documents):
        values = env(container(document))
        if container(document).get("command") == ["tuneplane-destinations"]:
            # The destinations controller reads no store and no shared secret.
            assert not set(values) & {*SHARED, "TUNEPLANE_DATABASE_URL"}
            continue
        for key in (*SHARED, "TUNEPLANE_DATABASE_URL"):
            assert "secretKeyRef" in values[key], (document["metadata"]["name"], key)
        assert PASSWORD not in yaml.safe_dump(document)
    first, second = (decoded(find(render(), "Secret", "rel-tuneplane-secrets"))
                     for _ in range(2))
    assert set(first) == SHARED
    for key in SHARED:  # made on install (and kept on upgrade by lookup), never a default
        assert first[key] != second[key]
        assert len(first[key]) >= 32


def test_the_secrets_are_made_before_the_migration_hook_reads_them() -> None:
    """A pre-install hook runs before the release's other resources exist."""
    documents = render()
    job = find(documents, "Job", "rel-tuneplane-init")["metadata"]["annotations"]
    for name in ("rel-tuneplane-secrets", "rel-tuneplane-database"):
        annotations = find(documents, "Secret", name)["metadata"]["annotations"]
        assert annotations["helm.sh/hook"] == job["helm.sh/hook"]
        assert int(annotations["helm.sh/hook-weight"]) < int(job["helm.sh/hook-weight"])
        # Not deleted once the hooks succeed: the pods read it after them.
        assert "hook-succeeded" not in annotations.get("helm.sh/hook-delete-policy", "")


def policies(documents: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d["spec"] for d in documents
            if d["kind"] == "NetworkPolicy"}


def pod_labels(document: dict[str, Any]) -> dict[str, str]:
    return dict(pod_template(document)["metadata"]["labels"])


@pytest.mark.parametrize("settings", [(), ("gateway.enabled=true",)])
def test_pods_take_traffic_only_on_the_port_they_serve(settings: tuple[str, ...]) -> None:
    """Each on the port it serves, and on its metrics port from the scrapers alone."""
    documents = render(*settings)
    found = policies(documents)
    deny = found.pop("rel-tuneplane-default-deny")
    assert deny == {"podSelector": {"matchLabels": POD_LABELS}, "policyTypes": ["Ingress"]}
    served = {"web": 8080, "destinations": 8443} | (
        {"ingest": 8444, "control": 8443} if settings else {})
    # The composed collector (the controller's Deployment): only the exporter reaches it.
    assert found.pop("rel-tuneplane-otelcol")["ingress"] == [{
        "ports": [{"port": 4317, "protocol": "TCP"}],
        "from": [{"podSelector": {"matchLabels": {
            **POD_LABELS, "app.kubernetes.io/component": "exporter"}}}]}]
    expected: dict[str, list[dict[str, Any]]] = {}
    for document in workloads(documents):  # the Job too: deny selects every pod
        labels = pod_labels(document)
        assert POD_LABELS.items() <= labels.items()
        component = labels["app.kubernetes.io/component"]
        allowing = {name: spec for name, spec in found.items()
                    if spec["podSelector"]["matchLabels"].get(
                        "app.kubernetes.io/component") == component}
        admitted: dict[str, list[dict[str, Any]]] = {}
        if component in served:
            admitted[f"rel-tuneplane-{component}"] = [
                {"ports": [{"port": served[component], "protocol": "TCP"}]}]
        if component in METRICS:  # projector and exporter too; not purge nor archive
            admitted[f"rel-tuneplane-{component}-metrics"] = [
                {"ports": [{"port": METRICS[component], "protocol": "TCP"}], "from": SCRAPERS}]
        # init, admin and the lifecycle's Jobs: no ingress at all
        assert {name: spec["ingress"] for name, spec in allowing.items()} == admitted, component
        for spec in allowing.values():
            assert spec["podSelector"]["matchLabels"] == {
                **POD_LABELS, "app.kubernetes.io/component": component}
        expected |= admitted
    assert set(found) == set(expected)  # no store policy unasked
    assert {c for c in METRICS if f"rel-tuneplane-{c}-metrics" in found} == set(METRICS) - (
        set() if settings else {"ingest", "control"})


def test_metrics_ports_are_reached_only_by_the_scrapers_given() -> None:
    peer = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "obs"}},
            "podSelector": {"matchLabels": {"app": "prometheus"}}}
    by_expression = {"namespaceSelector": {"matchExpressions": [
        {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["obs"]}]}}
    assert policies(render("gateway.enabled=true", as_json=(
        f"metrics.scrapers={json.dumps([by_expression])}",)))
    given = policies(render("gateway.enabled=true",
                            as_json=(f"metrics.scrapers={json.dumps([peer])}",)))
    for component, port in METRICS.items():
        assert given[f"rel-tuneplane-{component}-metrics"]["ingress"] == [
            {"ports": [{"port": port, "protocol": "TCP"}], "from": [peer]}]
    # None given: no policy admits anyone to them.
    assert not [name for name in policies(render("gateway.enabled=true",
                                                 as_json=("metrics.scrapers=[]",)))
                if name.endswith("-metrics")]
    # A peer of any namespace, or of the release's own (launches may run there), or an
    # address block, would take the tenants' launch pods.
    everyone: dict[str, Any]
    for everyone in ({}, {"namespaceSelector": {}}, {"namespaceSelector": {}, "podSelector": {}},
                     {"namespaceSelector": {"matchLabels": {}}},
                     {"namespaceSelector": {"matchExpressions": []}},
                     {"namespaceSelector": {"matchExpressions": [
                         {"key": "kubernetes.io/metadata.name", "operator": "Exists"}]}},
                     {"namespaceSelector": {}, "podSelector": {"matchLabels": {}}},
                     {"podSelector": {}}, {"podSelector": {"matchLabels": {"app": "x"}}},
                     {"ipBlock": {"cidr": "0.0.0.0/0"}},
                     {"ipBlock": {"cidr": "10.0.0.0/8"}, **peer}):
        refused = template(*GIVEN, as_json=(f"metrics.scrapers={json.dumps([everyone])}",))
        assert refused.returncode != 0
        assert "admits every pod of every namespace" in refused.stderr, refused.stderr


def test_every_serving_pod_has_its_metrics_port_and_the_scrape_annotations() -> None:
    documents = render("gateway.enabled=true")
    for component, port in METRICS.items():
        deployment = find(documents, "Deployment", f"rel-tuneplane-{component}")
        assert pod_template(deployment)["metadata"]["annotations"] == {
            "prometheus.io/scrape": "true", "prometheus.io/port": str(port),
            "prometheus.io/path": "/metrics"}
        c = container(deployment)
        assert {"name": "metrics", "containerPort": port, "protocol": "TCP"} in c["ports"]
        assert env(c)[f"TUNEPLANE_{component.upper()}_METRICS_PORT"] == str(port)
        # Never on a Service: the gateway's are public.
        service = find(documents, "Service", f"rel-tuneplane-{component}") \
            if component in ("ingest", "control", "web") else {"spec": {"ports": []}}
        assert port not in {p["port"] for p in service["spec"]["ports"]}
    # Nothing else scraped or serving metrics (purge and archive run the projector's image).
    for document in workloads(documents):
        if pod_labels(document)["app.kubernetes.io/component"] not in METRICS:
            assert "annotations" not in pod_template(document)["metadata"]
            assert not [p for p in container(document).get("ports", [])
                        if p["name"] == "metrics"]
            assert not [v for v in env(container(document)) if v.endswith("_METRICS_PORT")]
    moved = render("metrics.ports.web=9999", "metrics.ports.exporter=0")
    web = find(moved, "Deployment", "rel-tuneplane-web")
    assert pod_template(web)["metadata"]["annotations"]["prometheus.io/port"] == "9999"
    assert policies(moved)["rel-tuneplane-web-metrics"]["ingress"][0]["ports"] == [
        {"port": 9999, "protocol": "TCP"}]
    exporter = find(moved, "Deployment", "rel-tuneplane-exporter")  # 0: serves none
    assert "annotations" not in pod_template(exporter)["metadata"]
    assert "ports" not in container(exporter)
    assert "rel-tuneplane-exporter-metrics" not in policies(moved)


def test_metrics_off_render_no_port_annotation_policy_or_monitor() -> None:
    documents = render("gateway.enabled=true", "metrics.enabled=false",
                       "metrics.podMonitor.enabled=true")
    for document in workloads(documents):
        assert "annotations" not in pod_template(document)["metadata"]
        assert not [p for p in container(document).get("ports", []) if p["name"] == "metrics"]
        assert not [v for v in env(container(document)) if v.endswith("_METRICS_PORT")]
    assert not [name for name in policies(documents) if name.endswith("-metrics")]
    assert not [d for d in documents if d["kind"] == "PodMonitor"]


def test_pod_monitors_render_only_when_asked_with_the_alert_rules_job_names() -> None:
    assert not [d for d in render("gateway.enabled=true") if d["kind"] == "PodMonitor"]
    documents = render("gateway.enabled=true", "metrics.podMonitor.enabled=true",
                       "metrics.podMonitor.labels.release=kps",
                       "metrics.podMonitor.interval=30s")
    monitors = {d["metadata"]["name"]: d for d in documents if d["kind"] == "PodMonitor"}
    assert set(monitors) == {f"rel-tuneplane-{c}" for c in METRICS}
    scrape = yaml.safe_load((ROOT / "deploy" / "prometheus" / "prometheus.yaml").read_text())
    jobs = {c["job_name"] for c in scrape["scrape_configs"]}
    for component in METRICS:
        monitor = monitors[f"rel-tuneplane-{component}"]
        assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
        assert monitor["metadata"]["labels"]["release"] == "kps"
        assert monitor["spec"]["selector"] == {"matchLabels": {
            **POD_LABELS, "app.kubernetes.io/component": component}}
        (endpoint,) = monitor["spec"]["podMetricsEndpoints"]
        assert endpoint["port"] == "metrics"
        assert endpoint["path"] == "/metrics"
        assert endpoint["interval"] == "30s"
        (job,) = endpoint["relabelings"]
        assert job == {"targetLabel": "job", "replacement": f"tuneplane-{component}"}
        assert job["replacement"] in jobs  # the names alerts.yaml's rules expect
    without_gateway = [d for d in render("metrics.podMonitor.enabled=true")
                       if d["kind"] == "PodMonitor"]
    assert {d["metadata"]["name"] for d in without_gateway} == {
        f"rel-tuneplane-{c}" for c in ("projector", "web", "exporter")}


def test_web_peers_can_be_narrowed() -> None:
    peer = {"namespaceSelector": {"matchLabels": {"edge": "yes"}}}
    spec = policies(render("networkPolicy.webFrom[0].namespaceSelector.matchLabels.edge=yes")
                    )["rel-tuneplane-web"]
    assert spec["ingress"] == [{"ports": [{"port": 8080, "protocol": "TCP"}], "from": [peer]}]


#: The chart's component for each image, where they differ (the migration job).
#: The admin image runs as the migration job, the admin pod and retention's CronJob; the
#: projector's as the projectors and the purge's and archive's CronJobs.
COMPONENTS = {"admin": ("init", "admin", "retention"),
              "projector": ("projector", "purge", "archive")}
STORES = {"kafka": ("TUNEPLANE_KAFKA_BOOTSTRAP", 9092),
          "postgresql": ("TUNEPLANE_DATABASE_URL", 5432),
          "s3": ("TUNEPLANE_S3_ENDPOINT", 8333)}


def readers(variable: str) -> set[str]:
    """The chart components whose deployable reads ``variable`` (their settings classes)."""
    return {component for image, (settings, _) in IMAGES.items()
            if variable in {d.variable.name for d in describe(settings)}
            for component in COMPONENTS.get(image, (image,))}


@pytest.mark.parametrize("store", sorted(STORES))
def test_a_store_in_the_cluster_is_reached_only_by_the_pods_that_use_it(store: str) -> None:
    variable, port = STORES[store]
    documents = render("gateway.enabled=true",
                       f"networkPolicy.stores.{store}.podSelector.app={store}",
                       f"networkPolicy.stores.{store}.from[0].podSelector.matchLabels.m=yes")
    spec = policies(documents)[f"rel-tuneplane-{store}"]
    assert spec["podSelector"] == {"matchLabels": {"app": store}}
    assert spec["policyTypes"] == ["Ingress"]
    clients, own, extra = spec["ingress"]
    (peer,) = clients["from"]
    assert peer["podSelector"]["matchLabels"] == POD_LABELS
    (components,) = peer["podSelector"]["matchExpressions"]
    assert components["key"] == "app.kubernetes.io/component"
    assert components["operator"] == "In"
    assert set(components["values"]) == readers(variable)
    assert readers(variable) <= {pod_labels(d)["app.kubernetes.io/component"]
                                 for d in workloads(documents)}
    assert clients["ports"] == [{"port": port, "protocol": "TCP"}]
    assert own == {"from": [{"podSelector": {"matchLabels": {"app": store}}}]}
    assert extra == {"from": [{"podSelector": {"matchLabels": {"m": "yes"}}}]}
    assert {name for name in policies(documents) if name.endswith(tuple(STORES))} == {
        f"rel-tuneplane-{store}"}


def test_network_policies_can_be_turned_off() -> None:
    assert not policies(render("networkPolicy.enabled=false"))


def test_web_serves_https_with_a_given_certificate() -> None:
    documents = render("web.tlsSecret=web-tls")
    deployment = find(documents, "Deployment", "rel-tuneplane-web")
    c = container(deployment)
    values = env(c)
    assert values["TUNEPLANE_WEB_TLS_CERT"] == "/etc/tuneplane/web-tls/tls.crt"
    assert values["TUNEPLANE_WEB_TLS_KEY"] == "/etc/tuneplane/web-tls/tls.key"
    assert c["volumeMounts"] == [{"name": "web-tls", "mountPath": "/etc/tuneplane/web-tls",
                                  "readOnly": True}]
    assert deployment["spec"]["template"]["spec"]["volumes"] == [
        {"name": "web-tls", "secret": {"secretName": "web-tls"}}]
    assert c["readinessProbe"]["httpGet"]["scheme"] == "HTTPS"
    service = find(documents, "Service", "rel-tuneplane-web")
    assert service["spec"]["ports"][0]["name"] == "https"
    plain = container(find(render(), "Deployment", "rel-tuneplane-web"))
    assert "TUNEPLANE_WEB_TLS_CERT" not in env(plain)
    assert "volumeMounts" not in plain
    assert plain["readinessProbe"]["httpGet"]["scheme"] == "HTTP"


def test_node_ports_as_given_and_the_admin_pod_with_the_release_settings() -> None:
    documents = render("gateway.enabled=true", "gateway.service.type=NodePort",
                       "gateway.service.nodePorts.telemetry=30444")
    (telemetry,) = find(documents, "Service", "rel-tuneplane-ingest")["spec"]["ports"]
    assert telemetry["nodePort"] == 30444
    (control,) = find(documents, "Service", "rel-tuneplane-control")["spec"]["ports"]
    assert "nodePort" not in control  # Kubernetes picks it
    admin = container(find(documents, "Deployment", "rel-tuneplane-admin"))
    assert admin["image"] == f"{REPOSITORY}-admin:0.1.0"
    assert admin["command"] == ["sleep", "infinity"]
    assert required("admin", []) <= set(env(admin))
    assert not [d for d in render("admin.enabled=false")
                if d["metadata"]["name"] == "rel-tuneplane-admin"]
    # A release whose name says tuneplane names its objects after the release alone.
    done = subprocess.run([helm(), "template", "tuneplane", str(CHART), "--set", GIVEN[0]],
                          capture_output=True, text=True, check=False, timeout=120)
    assert done.returncode == 0, done.stderr
    names = {d["metadata"]["name"] for d in yaml.safe_load_all(done.stdout) if d}
    assert {"tuneplane-admin", "tuneplane-projector", "tuneplane-web"} <= names


STORES_CHART = ROOT / "deploy" / "helm" / "tuneplane-stores"


def test_the_stores_chart_makes_the_secrets_and_labels_the_chart_is_given() -> None:
    done = subprocess.run([helm(), "template", "stores", str(STORES_CHART), "--namespace",
                           "ml"], capture_output=True, text=True, check=False, timeout=120)
    assert done.returncode == 0, done.stderr
    documents = [d for d in yaml.safe_load_all(done.stdout) if d]
    database = find(documents, "Secret", "stores-database")["stringData"]["url"]
    password = find(documents, "Secret", "stores-passwords")["stringData"]["postgres"]
    assert database == f"postgresql://tuneplane:{password}@stores-postgresql.ml.svc:5432/tuneplane"
    assert len(password) == 32
    assert set(find(documents, "Secret", "stores-s3")["stringData"]) >= {
        "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"}
    for store, port in (("postgresql", 5432), ("kafka", 9092), ("s3", 8333)):
        labels = pod_labels(find(documents, "StatefulSet", f"stores-{store}"))
        assert labels == {"app.kubernetes.io/name": "tuneplane-stores",
                          "app.kubernetes.io/instance": "stores",
                          "app.kubernetes.io/component": store}
        service = find(documents, "Service", f"stores-{store}")["spec"]
        assert service["selector"] == labels
        assert service["ports"][0]["port"] == port


def test_the_data_lifecycle_runs_on_schedules_with_the_release_settings() -> None:
    jobs = {d["metadata"]["name"]: d for d in render() if d["kind"] == "CronJob"}
    assert sorted(jobs) == ["rel-tuneplane-archive", "rel-tuneplane-purge",
                            "rel-tuneplane-retention"]
    specs = {name: d["spec"]["jobTemplate"]["spec"]["template"]["spec"]
             for name, d in jobs.items()}
    assert [c["args"] for c in specs["rel-tuneplane-retention"]["containers"]] == [
        ["retention", "--undo-seconds", "86400"]]
    assert specs["rel-tuneplane-purge"]["containers"][0]["args"] == ["purge"]
    assert specs["rel-tuneplane-archive"]["containers"][0]["args"] == [
        "archive", "--trim", "--keep-group-if-consumed", "tuneplane-exporter"]
    for name, job in jobs.items():
        assert job["spec"]["concurrencyPolicy"] == "Forbid", name
        assert job["spec"]["suspend"] is False, name
        assert specs[name]["automountServiceAccountToken"] is False
    assert not [d for d in render("lifecycle.enabled=false") if d["kind"] == "CronJob"]
    assert {d["spec"]["suspend"] for d in render("lifecycle.suspend=true")
            if d["kind"] == "CronJob"} == {True}
    untrimmed = {d["metadata"]["name"]: d for d in render("lifecycle.trim=false",
                                                          "lifecycle.purgeSchedule=")
                 if d["kind"] == "CronJob"}
    assert sorted(untrimmed) == ["rel-tuneplane-archive", "rel-tuneplane-retention"]
    archive = untrimmed["rel-tuneplane-archive"]["spec"]["jobTemplate"]["spec"]["template"]
    assert archive["spec"]["containers"][0]["args"] == ["archive"]
