"""The collector artifact's manifest, and checking an artifact against it before it runs.

An artifact is a directory named by the sha256 of its ``manifest.json`` (canonical JSON:
the format, the target triple, each file's sha256) holding the static ``tuneplane-collector``
of that target (``tuneplane-collector artifact build``). A static musl binary runs on any
Linux of its architecture whatever its libc, so a host's target follows from ``uname -m``.
Standard library only: the node agent checks an artifact with it before running anything
from it. A Slurm node checks the same with its own coreutils
(``tuneplane.control.slurm.jobscript``).
"""

from __future__ import annotations

import hashlib
import json
import platform
from pathlib import Path
from typing import Any

MANIFEST = "manifest.json"
FORMAT = 2
PROGRAM = "tuneplane-collector"
#: Each target, and the machine names (``uname -m``) of the hosts that run it.
TARGETS = {"x86_64-unknown-linux-musl": ("x86_64", "amd64"),
           "aarch64-unknown-linux-musl": ("aarch64", "arm64")}


class ArtifactError(RuntimeError):
    """The artifact must not be run (or cannot be built); the message says why."""


def host_target(system: str | None = None, machine: str | None = None) -> str:
    """The target this host runs (``system`` and ``machine`` as ``uname -s`` and ``-m``)."""
    system = system or platform.system()
    machine = machine or platform.machine()
    if system != "Linux":
        raise ArtifactError(f"the collector runs on Linux; this host runs {system}")
    for target, machines in TARGETS.items():
        if machine in machines:
            return target
    raise ArtifactError(f"no collector target runs on a {machine} host")


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verify(directory: Path, host: str | None = None) -> dict[str, Any]:
    """Check the artifact before running it on a host of target ``host`` (default: this
    host's); returns its manifest."""
    host = host or host_target()
    try:
        data = (directory / MANIFEST).read_bytes()
        manifest: dict[str, Any] = json.loads(data)
    except (OSError, ValueError) as exc:
        raise ArtifactError(f"artifact {directory}: no readable {MANIFEST}: {exc}") from None
    digest = hashlib.sha256(data).hexdigest()
    if directory.name != digest:
        raise ArtifactError(f"artifact {directory}: its manifest's sha256 is {digest}; the "
                            "directory name must be that digest (renamed or edited manifest)")
    if manifest.get("format") != FORMAT:
        raise ArtifactError(f"artifact {directory}: manifest format {manifest.get('format')} "
                            f"is not {FORMAT}")
    if manifest.get("target") != host:
        raise ArtifactError(f"artifact {directory} is built for {manifest.get('target')}; "
                            f"this host runs {host}")
    listed: dict[str, str] = manifest.get("files") or {}
    present = {p.name for p in directory.iterdir() if p.name != MANIFEST}
    for name in sorted(present - set(listed)):
        raise ArtifactError(f"artifact {directory}: {name} is not in the manifest (added)")
    for name in sorted(present):  # what is checked is what runs: a link could change
        if (directory / name).is_symlink():
            raise ArtifactError(f"artifact {directory}: {name} is a symbolic link")
    for name, expected in sorted(listed.items()):
        path = directory / name
        if not path.is_file():
            raise ArtifactError(f"artifact {directory}: {name} is missing")
        if sha256(path) != expected:
            raise ArtifactError(f"artifact {directory}: {name} does not match its sha256 "
                                "(tampered)")
    return manifest
