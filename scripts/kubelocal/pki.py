"""The cluster's certificates and kubeconfigs, made with openssl below ``.kube-local/pki``.

One CA signs every certificate: the API server's (named for loopback, the node's address,
the ``kubernetes`` Service's address and names), the kubelet's serving certificate, and a
client certificate per component, each with the user and group the API server's RBAC knows
it by (``system:kube-controller-manager``, ``system:node:<node>`` in ``system:nodes``...).
The service-account tokens are signed with a key pair of their own. Made once; the API
server's and the kubelet's are made again when the node's address changed.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from scripts.kubelocal.layout import DATA, NODE, SERVICE_IP, kubeconfig

PKI = DATA / "pki"
#: Client certificates: file name → (user, group).
CLIENTS = {
    "admin": ("tuneplane-admin", "system:masters"),
    "controller-manager": ("system:kube-controller-manager", ""),
    "scheduler": ("system:kube-scheduler", ""),
    "kubelet": (f"system:node:{NODE}", "system:nodes"),
    "proxy": ("system:kube-proxy", ""),
    "coredns": ("system:coredns", ""),
    "netpol": ("system:kube-network-policies", ""),
    "apiserver-kubelet-client": ("kube-apiserver-kubelet-client", "system:masters"),
}


def user_role(user: str, rules: list[dict[str, object]]) -> list[dict[str, object]]:
    """A ClusterRole named for a client ``user`` (one of ``CLIENTS``), granting ``rules``,
    and its binding to that user: what a host daemon may read, for ``kubectl apply``."""
    return [{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
             "metadata": {"name": user}, "rules": rules},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
             "metadata": {"name": user},
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                         "name": user},
             "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                           "name": user}]}]


def openssl(*args: str) -> None:
    done = subprocess.run(["openssl", *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"openssl {args[0]} failed: {done.stderr.strip()[-500:]}")


def key(path: Path) -> None:
    openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-out", str(path))
    path.chmod(0o600)


def ca() -> None:
    if (PKI / "ca.crt").exists():
        return
    key(PKI / "ca.key")
    openssl("req", "-x509", "-new", "-key", str(PKI / "ca.key"), "-out", str(PKI / "ca.crt"),
            "-days", "3650", "-subj", "/CN=tuneplane-kube-ca")


def signed(name: str, subject: str, *, names: list[str] | None = None) -> None:
    """``<name>.crt`` and ``.key``, signed by the CA: a server's with ``names`` (DNS names
    and IP addresses), a client's without."""
    key(PKI / f"{name}.key")
    openssl("req", "-new", "-key", str(PKI / f"{name}.key"), "-out", str(PKI / f"{name}.csr"),
            "-subj", subject)
    extensions = ["basicConstraints=critical,CA:FALSE",
                  "keyUsage=critical,digitalSignature,keyEncipherment",
                  f"extendedKeyUsage={'serverAuth,clientAuth' if names else 'clientAuth'}"]
    if names:
        alt = ",".join(f"IP:{n}" if n[0].isdigit() else f"DNS:{n}" for n in names)
        extensions.append(f"subjectAltName={alt}")
    ext = PKI / f"{name}.ext"
    ext.write_text("\n".join(extensions) + "\n")
    openssl("x509", "-req", "-in", str(PKI / f"{name}.csr"), "-CA", str(PKI / "ca.crt"),
            "-CAkey", str(PKI / "ca.key"), "-CAcreateserial", "-out", str(PKI / f"{name}.crt"),
            "-days", "3650", "-extfile", str(ext))


def write_kubeconfig(name: str, server: str) -> None:
    kubeconfig(name).write_text(f"""apiVersion: v1
kind: Config
clusters:
- name: tuneplane
  cluster:
    certificate-authority: {PKI / 'ca.crt'}
    server: {server}
users:
- name: {name}
  user:
    client-certificate: {PKI / f'{name}.crt'}
    client-key: {PKI / f'{name}.key'}
contexts:
- name: tuneplane
  context: {{cluster: tuneplane, user: {name}}}
current-context: tuneplane
""")
    kubeconfig(name).chmod(0o600)


def make(node_ip: str, api_port: int) -> None:
    """Everything the cluster's components authenticate with, for the node at ``node_ip``
    and the API server at ``https://<node_ip>:<api_port>``."""
    PKI.mkdir(parents=True, exist_ok=True)
    PKI.chmod(0o700)
    ca()
    made_for = PKI / "node-ip"
    fresh = not made_for.exists() or made_for.read_text() != node_ip
    if fresh or not (PKI / "apiserver.crt").exists():
        signed("apiserver", "/CN=kube-apiserver", names=[
            "127.0.0.1", node_ip, SERVICE_IP, "localhost", "kubernetes", "kubernetes.default",
            "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"])
        signed("kubelet-serving", f"/CN={NODE}", names=[node_ip, NODE, "127.0.0.1"])
        made_for.write_text(node_ip)
    for name, (user, group) in CLIENTS.items():
        if not (PKI / f"{name}.crt").exists():
            signed(name, f"/CN={user}" + (f"/O={group}" if group else ""))
    if not (PKI / "service-account.key").exists():
        key(PKI / "service-account.key")
        openssl("pkey", "-in", str(PKI / "service-account.key"), "-pubout", "-out",
                str(PKI / "service-account.pub"))
    for name in CLIENTS:
        if name != "apiserver-kubelet-client":
            write_kubeconfig(name, f"https://{node_ip}:{api_port}")
