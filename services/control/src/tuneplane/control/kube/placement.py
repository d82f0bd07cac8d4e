"""Where a project's Kubernetes launches run, and where their spools live: the operator's
choices (control's ``--kubernetes-namespace`` and ``--kubernetes-spool``, each per project),
never a request's.

A namespace is mapped per project (``PROJECT=NAMESPACE``; a bare ``NAMESPACE`` takes every
project not mapped otherwise); a project without one cannot launch. A namespace is a trust
boundary: whoever may read its Secrets or make pods in it can act as its launches' sidecars,
so each project should have one of its own (control warns of one shared). The spool grant is one
given per project as the namespace is (``PROJECT=GRANT``, a bare ``GRANT`` for the others;
``emptyDir`` by default), one of:

- ``emptyDir``: a volume of the pod on the node's own disk, gone with the pod (a pod deleted
  mid-run is a destroyed spool: what it held undelivered is lost, and said so);
- ``hostPath:/DIR``: a directory every node has, shared as /tmp is (root's, 1777): each
  pod's collector keeps its spools below ``DIR/<uid>``, which outlives the pod;
- ``storageClass:NAME[:SIZE]``: a generic ephemeral volume of that class (a ``local`` class),
  one per pod (default size 1Gi).

Whatever the grant, the collector judges the spool's filesystem from the node's mount table
before it redeems its ticket, and refuses a network filesystem with no fallback.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tuneplane.control.by_project import ByProject, split

#: Where the sidecar mounts the spool volume.
SPOOL_MOUNT = "/var/spool/tuneplane"
DNS_LABEL = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")
CLASS_NAME = re.compile(r"^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$")
SIZE = re.compile(r"^[0-9]{1,9}([KMGT]i)?$")


class PlacementError(ValueError):
    """A --kubernetes-namespace or --kubernetes-spool setting that cannot be used, or a
    project without a namespace."""


def namespace(name: str) -> str:
    if not DNS_LABEL.fullmatch(name):
        raise PlacementError(f"--kubernetes-namespace: {name!r} is not a namespace name")
    return name


class Namespaces(ByProject[str]):
    def __init__(self, settings: Sequence[str]) -> None:
        super().__init__(settings, flag="--kubernetes-namespace",
                         what="Kubernetes namespace", placeholder="NAMESPACE",
                         resolve=namespace, error=PlacementError)

    def all(self) -> list[str]:
        return sorted(set(self.chosen()))

    def shared(self) -> list[str]:
        """Namespaces more than one project's launches run in. Whoever may read Secrets or
        make pods there can redeem another project's ticket: one namespace per project."""
        chosen = self.chosen()
        return sorted({n for n in chosen if chosen.count(n) > 1})


def workdir_limit(size: str) -> str:
    """``--kubernetes-workdir-limit``: a size (512Mi, 20Gi), or "" for none."""
    if size and not SIZE.fullmatch(size):
        raise PlacementError(f"--kubernetes-workdir-limit {size!r}: want a size such as "
                             "512Mi or 20Gi")
    return size


@dataclass(frozen=True, slots=True)
class SpoolGrant:
    kind: str        # emptyDir, hostPath, storageClass
    where: str = ""  # the host directory, or the storage class
    size: str = "1Gi"

    @classmethod
    def parse(cls, text: str) -> SpoolGrant:
        kind, _, rest = text.partition(":")
        if kind == "emptyDir" and not rest:
            return cls(kind)
        if kind == "hostPath" and rest.startswith("/") and rest.strip("/") and \
                "\0" not in rest and ".." not in rest.split("/"):
            return cls(kind, rest.rstrip("/"))
        if kind == "storageClass":
            name, _, size = rest.partition(":")
            if CLASS_NAME.fullmatch(name) and (not size or SIZE.fullmatch(size)):
                return cls(kind, name, size or "1Gi")
        raise PlacementError(f"--kubernetes-spool {text!r}: want emptyDir, hostPath:/DIR or "
                             "storageClass:NAME[:SIZE]")

    @property
    def root(self) -> str:
        """The sidecar's --spool-root: the mount itself where it is shared as /tmp is (each
        uid below it), else a directory the collector makes private in it."""
        return SPOOL_MOUNT if self.kind == "hostPath" else f"{SPOOL_MOUNT}/spools"

    def volume(self) -> dict[str, Any]:
        """The pod's ``spool`` volume."""
        if self.kind == "hostPath":
            return {"name": "spool", "hostPath": {"path": self.where, "type": "Directory"}}
        if self.kind == "storageClass":
            return {"name": "spool", "ephemeral": {"volumeClaimTemplate": {"spec": {
                "accessModes": ["ReadWriteOnce"], "storageClassName": self.where,
                "resources": {"requests": {"storage": self.size}}}}}}
        return {"name": "spool", "emptyDir": {}}

    def __str__(self) -> str:
        return {"emptyDir": "emptyDir", "hostPath": f"hostPath:{self.where}",
                "storageClass": f"storageClass:{self.where}:{self.size}"}[self.kind]


class Spools(ByProject[SpoolGrant]):
    """The spool grant per project (``PROJECT=GRANT``; a bare ``GRANT`` for every project
    not named; ``emptyDir`` when no bare one is given)."""

    def __init__(self, settings: Sequence[str]) -> None:
        bare = any(not split(item)[0] for item in settings)
        super().__init__([*settings, *([] if bare else ["emptyDir"])],
                         flag="--kubernetes-spool", what="spool grant",
                         placeholder="GRANT", resolve=SpoolGrant.parse, error=PlacementError)
