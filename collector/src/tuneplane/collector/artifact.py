"""The collector artifact: a content-addressed directory that runs beside any training job.

``build`` installs the collector and its locked dependencies for this host's target
(OS, arch, libc, Python ABI) into a directory with a launcher, writes ``manifest.json``
(target and every file's sha256) and names the directory after the manifest's sha256.
Superseded by the static collector's artifact (``tuneplane-collector artifact build`` of
collector/binary, checked by ``tuneplane.contract.artifact``); kept for the benchmarks that
set the Python collector's figures beside the binary's. The launcher starts Python
isolated (``-I -S -B``): no PYTHONPATH, no user or system site-packages of the training
environment, no bytecode written into the artifact. The artifact ships its bytecode
instead, compiled reproducibly (unchecked-hash ``.pyc``: no timestamps), so no start
compiles a module again.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tuneplane.contract.artifact import MANIFEST, ArtifactError, sha256

FORMAT = 1


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


LAUNCHER = ("#!/bin/sh\n"
            "# Runs {program} isolated from the training environment's packages.\n"
            'here=$(cd "$(dirname "$0")/.." && pwd)\n'
            "{environment}"
            'exec "${TUNEPLANE_COLLECTOR_PYTHON:-python{version}}" -I -S -B '
            '"$here/bin/{module}.py" "$@"\n')
LAUNCH_PY = """import os, sys
sys.path[:0] = [os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                             "site-packages")]
{preamble}from tuneplane.collector.{module} import main
sys.exit(main())
"""
#: The artifact's programs: the collector, and the node agent that launches it.
PROGRAMS = {"tuneplane-collector": "cli"}
#: The collector's start, held to its memory budget beside the job (50 MB while
#: following a file): two malloc arenas for its threads, not eight per core; and no
#: Python ssl, which asyncio (imported by gRPC) would load with OpenSSL for nothing: the
#: collector's TLS is gRPC's own (~4 MiB).
LEAN = {"tuneplane-collector": (
    'export MALLOC_ARENA_MAX="${MALLOC_ARENA_MAX:-2}"\n',
    'sys.modules["ssl"] = None  # not used: gRPC brings its own TLS (see artifact.LEAN)\n')}


def canonical(document: dict[str, Any]) -> bytes:
    return json.dumps(document, sort_keys=True, separators=(",", ":")).encode()


def tree(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): sha256(p)
            for p in sorted(root.rglob("*")) if p.is_file() and p.name != MANIFEST}


def run(args: list[str], cwd: Path) -> None:
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise ArtifactError(f"{' '.join(args[:3])} failed:\n{done.stderr[-3000:]}")


def compile_bytecode(site: Path) -> None:
    """Compile every module of ``site`` anew, the same bytes for the same sources."""
    for cache in site.rglob("__pycache__"):
        shutil.rmtree(cache)
    # Not -I or -E: they would drop PYTHONHASHSEED, and set order in constants follows it.
    done = subprocess.run(
        [sys.executable, "-m", "compileall", "-q", "-j", "0", "--invalidation-mode",
         "unchecked-hash", "-d", "site-packages", str(site)], capture_output=True, text=True,
        check=False, env={**os.environ, "PYTHONHASHSEED": "0"}, cwd=site)
    if done.returncode != 0:
        raise ArtifactError(f"compiling the artifact's bytecode failed:\n{done.stdout[-3000:]}")


def build(workspace: Path, out: Path) -> Path:
    """Build the artifact for this host; returns ``out/<manifest sha256>``."""
    if shutil.which("uv") is None:
        raise ArtifactError("building the artifact needs uv on PATH")
    with tempfile.TemporaryDirectory(prefix="tuneplane-artifact-") as tmp:
        staging, wheels = Path(tmp) / "artifact", Path(tmp) / "wheels"
        requirements = Path(tmp) / "requirements.txt"
        run(["uv", "export", "--frozen", "--no-dev", "--no-emit-workspace", "--package",
             "tuneplane-collector", "--format", "requirements-txt", "-o", str(requirements)],
            workspace)
        for package in ("tuneplane-contract", "tuneplane-collector"):
            run(["uv", "build", "--wheel", "--package", package, "-o", str(wheels)], workspace)
        site = staging / "site-packages"
        python = ["--python", sys.executable]
        run(["uv", "pip", "install", *python, "--target", str(site), "--require-hashes",
             "-r", str(requirements)], workspace)
        run(["uv", "pip", "install", *python, "--target", str(site), "--no-deps",
             *map(str, sorted(wheels.glob("*.whl")))], workspace)
        compile_bytecode(site)
        # Installer bookkeeping names temporary paths; without it the same sources and lock
        # give the same digest.
        for name in ("direct_url.json", "uv_cache.json", "RECORD", "INSTALLER", "REQUESTED"):
            for path in site.glob(f"*.dist-info/{name}"):
                path.unlink()
        shutil.rmtree(site / "bin", ignore_errors=True)  # console scripts of the venv kind
        (staging / "bin").mkdir()
        version = f"{sys.version_info.major}.{sys.version_info.minor}"
        for program, module in PROGRAMS.items():
            entry = module.replace(".", "_")
            launcher = staging / "bin" / program
            environment, preamble = LEAN.get(program, ("", ""))
            launcher.write_text(LAUNCHER.replace("{version}", version).replace(
                "{program}", program).replace("{module}", entry).replace(
                "{environment}", environment))
            launcher.chmod(0o755)
            (staging / "bin" / f"{entry}.py").write_text(LAUNCH_PY.replace(
                "{module}", module).replace("{preamble}", preamble))
        target = Target.of_this_host()
        manifest = {"format": FORMAT, "name": "tuneplane-collector",
                    "entry_point": "bin/tuneplane-collector",
                    "programs": [f"bin/{p}" for p in PROGRAMS],
                    "target": {"os": target.os, "arch": target.arch, "libc": target.libc,
                               "python_abi": target.python_abi},
                    "files": tree(staging)}
        data = canonical(manifest)
        (staging / MANIFEST).write_bytes(data)
        final = out / hashlib.sha256(data).hexdigest()
        if final.exists():
            return final
        out.mkdir(parents=True, exist_ok=True)
        shutil.copytree(staging, final, symlinks=True)
    return final


