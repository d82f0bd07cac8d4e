"""The collector artifact's manifest, and checking an artifact against it before it runs.

Standard library only, and self-contained: control also hands this module's source, inline
in a Slurm job script, to the compute node's own Python, which checks the artifact there
with it before running anything from it (``tuneplane.control.slurm.jobscript``).
"""

from __future__ import annotations

import hashlib
import json
import platform
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MANIFEST = "manifest.json"
FORMAT = 1


class ArtifactError(RuntimeError):
    """The artifact cannot be built, or must not be run; the message says why."""


@dataclass(frozen=True, slots=True)
class Target:
    os: str
    arch: str
    libc: str          # e.g. "glibc 2.36"
    python_abi: str    # e.g. "cpython-311"

    @classmethod
    def of_this_host(cls) -> Target:
        libc, version = platform.libc_ver()
        return cls(platform.system().lower(), platform.machine(),
                   f"{libc} {version}".strip(), sys.implementation.cache_tag)

    @classmethod
    def of_interpreter(cls, python: str) -> Target:
        """The target as the Python that will run the artifact sees it."""
        program = ("import platform, sys; l, v = platform.libc_ver(); print(platform.system()"
                   ".lower(), platform.machine(), f'{l} {v}'.strip(), "
                   "sys.implementation.cache_tag, sep='|')")
        try:
            done = subprocess.run([python, "-I", "-c", program], capture_output=True,
                                  text=True, check=True, timeout=30)
        except (OSError, subprocess.SubprocessError) as exc:
            raise ArtifactError(f"cannot run the Python {python!r} that would run the "
                                f"artifact: {exc}") from None
        os_name, arch, libc, abi = done.stdout.strip().split("|")
        return cls(os_name, arch, libc, abi)

def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _libc_at_least(built: str, host: str) -> bool:
    built_name, _, built_version = built.partition(" ")
    host_name, _, host_version = host.partition(" ")
    if built_name != host_name:
        return False
    def parts(v: str) -> tuple[int, ...]:
        return tuple(int(x) for x in v.split(".") if x.isdigit())
    return parts(host_version) >= parts(built_version)


def verify(directory: Path, host: Target | None = None) -> dict[str, Any]:
    """Check the artifact before running it; returns its manifest."""
    host = host or Target.of_this_host()
    path = directory / MANIFEST
    try:
        data = path.read_bytes()
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
    built = Target(**manifest["target"])
    for field, want, have in (("OS", built.os, host.os), ("arch", built.arch, host.arch),
                              ("Python ABI", built.python_abi, host.python_abi)):
        if want != have:
            raise ArtifactError(f"artifact {directory} is built for {field} {want}; this host "
                                f"has {have}")
    if not _libc_at_least(built.libc, host.libc):
        raise ArtifactError(f"artifact {directory} needs {built.libc}; this host has "
                            f"{host.libc or 'no glibc'}")
    listed: dict[str, str] = manifest["files"]
    present = {p.relative_to(directory).as_posix() for p in directory.rglob("*")
               if p.is_file() and p.name != MANIFEST}
    for name in sorted(present - set(listed)):
        raise ArtifactError(f"artifact {directory}: {name} is not in the manifest (added)")
    for name, expected in sorted(listed.items()):
        if name not in present:
            raise ArtifactError(f"artifact {directory}: {name} is missing")
        if sha256(directory / name) != expected:
            raise ArtifactError(f"artifact {directory}: {name} does not match its sha256 "
                                "(tampered)")
    return manifest
