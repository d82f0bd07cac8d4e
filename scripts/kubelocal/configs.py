"""The configuration files of the cluster's daemons, written below ``.kube-local/``.

containerd (its own root, state and socket; the CRI plugin with the locally built sandbox
image, and ``restrict_oom_score_adj``, as this host gives no CAP_SYS_RESOURCE), the
bridge network pods get their addresses from (``POD_CIDR``), the kubelet (cgroupfs,
cgroup v1 allowed, images never collected: nothing could pull them again) and kube-proxy
(iptables).
"""

from __future__ import annotations

import json

from scripts.kubelocal.layout import DATA, DNS_IP, NODE, PAUSE_IMAGE, POD_CIDR, kubeconfig
from scripts.kubelocal.pki import PKI

CONTAINERD = DATA / "containerd"
SOCKET = CONTAINERD / "containerd.sock"
CNI_CONF = DATA / "cni"
CNI_BIN = "/usr/lib/cni"
KUBELET = DATA / "kubelet"


def containerd() -> str:
    cri = 'plugins."io.containerd.grpc.v1.cri"'
    return f"""version = 2
root = "{CONTAINERD / 'root'}"
state = "{CONTAINERD / 'state'}"

[grpc]
  address = "{SOCKET}"

[plugins."io.containerd.internal.v1.opt"]
  path = "{CONTAINERD / 'opt'}"

[{cri}]
  sandbox_image = "{PAUSE_IMAGE}"
  restrict_oom_score_adj = true
  [{cri}.containerd]
    default_runtime_name = "runc"
    [{cri}.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [{cri}.containerd.runtimes.runc.options]
        SystemdCgroup = false
  [{cri}.cni]
    bin_dir = "{CNI_BIN}"
    conf_dir = "{CNI_CONF}"
"""


def cni() -> str:
    return json.dumps({
        "cniVersion": "1.0.0", "name": "tuneplane", "plugins": [
            {"type": "bridge", "bridge": "cni0", "isGateway": True, "ipMasq": True,
             "hairpinMode": True,
             "ipam": {"type": "host-local", "ranges": [[{"subnet": POD_CIDR}]],
                      "routes": [{"dst": "0.0.0.0/0"}]}},
            # Each pod's address admitted in FORWARD (chain CNI-FORWARD): Docker's engine
            # sets that chain's policy to DROP, which drops pod-to-pod traffic on the bridge.
            {"type": "firewall", "backend": "iptables"},
            {"type": "portmap", "capabilities": {"portMappings": True}}]}, indent=1)


def kubelet(node_ip: str, ports: dict[str, int]) -> str:
    return json.dumps({
        "apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
        "address": node_ip, "port": ports["kubelet"], "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1", "healthzPort": ports["kubelet-healthz"],
        "authentication": {"x509": {"clientCAFile": str(PKI / "ca.crt")},
                           "webhook": {"enabled": True}, "anonymous": {"enabled": False}},
        "authorization": {"mode": "Webhook"},
        "tlsCertFile": str(PKI / "kubelet-serving.crt"),
        "tlsPrivateKeyFile": str(PKI / "kubelet-serving.key"),
        "cgroupDriver": "cgroupfs", "failCgroupV1": False,
        "containerRuntimeEndpoint": f"unix://{SOCKET}",
        "imageGCHighThresholdPercent": 100, "imageGCLowThresholdPercent": 99,
        "evictionHard": {"memory.available": "100Mi", "nodefs.available": "1%",
                         "imagefs.available": "1%"},
        "failSwapOn": False, "resolvConf": "/etc/resolv.conf",
        "podLogsDir": str(DATA / "pod-logs"),
        "clusterDomain": "cluster.local", "clusterDNS": [DNS_IP], "podCIDR": POD_CIDR,
        "serializeImagePulls": False, "protectKernelDefaults": False,
        "makeIPTablesUtilChains": True, "registerNode": True,
        "localStorageCapacityIsolation": True,
        # A rotated Secret reaches its pods' volumes within about this (default a minute).
        "syncFrequency": "10s"}, indent=1)


def proxy(ports: dict[str, int]) -> str:
    return json.dumps({
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1", "kind": "KubeProxyConfiguration",
        "mode": "iptables", "hostnameOverride": NODE, "clusterCIDR": POD_CIDR,
        "clientConnection": {"kubeconfig": str(kubeconfig("proxy"))},
        "metricsBindAddress": f"127.0.0.1:{ports['proxy-metrics']}",
        "healthzBindAddress": f"127.0.0.1:{ports['proxy-healthz']}",
        "conntrack": {"maxPerCore": 0, "min": 0}}, indent=1)


def write(node_ip: str, ports: dict[str, int]) -> None:
    for place in (CONTAINERD, CNI_CONF, KUBELET):
        place.mkdir(parents=True, exist_ok=True)
    (CONTAINERD / "config.toml").write_text(containerd())
    (CNI_CONF / "10-tuneplane.conflist").write_text(cni())
    (DATA / "kubelet.json").write_text(kubelet(node_ip, ports))
    (DATA / "proxy.json").write_text(proxy(ports))
