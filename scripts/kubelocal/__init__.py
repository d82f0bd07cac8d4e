"""A local single-node Kubernetes cluster for tests and development (``scripts/kube``).

Kubernetes' own binaries, built once from the Go module proxy (``binaries/go.mod``) and
cached below ``~/.cache/tuneplane/kube``; etcd, containerd (an instance of its own, beside
Docker's), runc and the CNI plugins from Debian. Everything the cluster keeps lives below
``.kube-local/`` of the checkout (``TUNEPLANE_KUBE_DIR``): certificates, kubeconfigs,
etcd's data, containerd's root, the kubelet's pods. No registry is reachable: the pod
sandbox image is built here and the project's images are imported from Docker, and pods use
them with ``imagePullPolicy: Never``.
"""
