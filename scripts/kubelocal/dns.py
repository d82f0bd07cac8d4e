"""The cluster's DNS: CoreDNS on the host, as the ``kube-dns`` Service pods are told of.

CoreDNS (built with the plugins it needs, see ``addons/``) runs as a daemon like the
others, listening on the node's address at a port of its own; the ``kube-dns`` Service
(``DNS_IP``, port 53) has no selector and one EndpointSlice naming that address and port, so
kube-proxy carries a pod's queries to it, and the kubelet writes ``DNS_IP`` into every pod's
resolv.conf. It answers the cluster's names (``<service>.<namespace>.svc.cluster.local``,
through the API as ``system:coredns``, which may only read what it serves) and forwards
the rest to the host's resolvers.
"""

from __future__ import annotations

import json

from scripts.kubelocal.layout import DATA, DNS_IP, kubeconfig
from scripts.kubelocal.pki import user_role

COREFILE = DATA / "Corefile"
#: What CoreDNS may read: the names it serves.
RULES: list[dict[str, object]] = [
    {"apiGroups": [""], "resources": ["services", "pods", "namespaces"],
     "verbs": ["list", "watch"]},
    {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"],
     "verbs": ["list", "watch"]}]
PORTS = (("dns", "UDP"), ("dns-tcp", "TCP"))


def corefile(node_ip: str, ports: dict[str, int]) -> str:
    return f""".:{ports['dns']} {{
    bind {node_ip}
    errors
    health 127.0.0.1:{ports['dns-health']}
    ready 127.0.0.1:{ports['dns-ready']}
    kubernetes cluster.local in-addr.arpa ip6.arpa {{
        kubeconfig {kubeconfig('coredns')} tuneplane
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 5
    }}
    forward . /etc/resolv.conf
    cache 5
    loadbalance
}}
"""


def objects(node_ip: str, ports: dict[str, int]) -> str:
    """The role, the Service and its EndpointSlice, as one List for ``kubectl apply``."""
    labels = {"k8s-app": "kube-dns", "kubernetes.io/name": "CoreDNS"}
    service = {"apiVersion": "v1", "kind": "Service",
               "metadata": {"name": "kube-dns", "namespace": "kube-system", "labels": labels},
               "spec": {"clusterIP": DNS_IP, "ports": [
                   {"name": name, "port": 53, "targetPort": ports["dns"], "protocol": protocol}
                   for name, protocol in PORTS]}}
    endpoints = {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                 "metadata": {"name": "kube-dns-host", "namespace": "kube-system",
                              "labels": {"kubernetes.io/service-name": "kube-dns",
                                         "endpointslice.kubernetes.io/managed-by":
                                             "scripts.kube"}},
                 "addressType": "IPv4",
                 "endpoints": [{"addresses": [node_ip], "conditions": {"ready": True}}],
                 "ports": [{"name": name, "port": ports["dns"], "protocol": protocol}
                           for name, protocol in PORTS]}
    return json.dumps({"apiVersion": "v1", "kind": "List",
                       "items": [*user_role("system:coredns", RULES), service, endpoints]})


def write(node_ip: str, ports: dict[str, int]) -> None:
    COREFILE.write_text(corefile(node_ip, ports))
