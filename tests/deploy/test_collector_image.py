"""The collector's sidecar image (deploy/collector-image): FROM scratch with the artifact's
static binary, built by the real Docker Engine, and run there reading a file of a volume
as an unprivileged user, with no network."""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path

import pytest

from tests.support.environment import ROOT
from tests.support.truth import write_jsonl

pytestmark = pytest.mark.usefixtures("docker_engine")

DOCKERFILE = ROOT / "deploy" / "collector-image" / "Dockerfile"


def docker(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout,
                          check=False)


def test_the_sidecar_image_is_the_binary_alone_and_reads_a_shared_volume(
        collector_artifact: Path, tmp_path: Path) -> None:
    tag = f"tuneplane-collector-test:{uuid.uuid4().hex[:12]}"
    built = docker("build", "--quiet", "-f", str(DOCKERFILE), "-t", tag,
                   str(collector_artifact), timeout=300)
    assert built.returncode == 0, built.stderr
    try:
        data = tmp_path / "data"
        data.mkdir()
        write_jsonl(data / "m.jsonl", range(3), ["loss"])
        (data / "m.jsonl").chmod(0o644)
        data.chmod(0o755)
        ran = docker("run", "--rm", "--network", "none", "--read-only", "-v",
                     f"{data}:/data:ro", tag, "read", "/data/m.jsonl")
        assert ran.returncode == 0, ran.stderr
        assert [json.loads(line)["step"] for line in ran.stdout.splitlines()] == [0, 1, 2]
        (info,) = json.loads(docker("image", "inspect", tag).stdout)
        assert info["Config"]["User"] == "65532:65532"
        assert info["Config"]["Entrypoint"] == ["/tuneplane-collector"]
        # Two files, the artifact's: the image is no larger than the binary and manifest.
        binary = (collector_artifact / "tuneplane-collector").stat().st_size
        assert binary <= info["Size"] <= binary + 64 * 1024, info["Size"]
        exported = docker("create", tag)
        assert exported.returncode == 0, exported.stderr
        container = exported.stdout.strip()
        try:
            listing = subprocess.run(f"docker export {container} | tar -t", shell=True,
                                     capture_output=True, text=True, check=True, timeout=120)
        finally:
            docker("rm", container)
        files = {line.rstrip("/") for line in listing.stdout.splitlines()}
        assert {"manifest.json", "tuneplane-collector"} <= files
        assert not files - {"manifest.json", "tuneplane-collector", ".dockerenv", "dev",
                            "etc", "proc", "sys", "dev/console", "dev/pts", "dev/shm",
                            "etc/hostname", "etc/hosts", "etc/mtab", "etc/resolv.conf"}, files
    finally:
        docker("rmi", "--force", tag)
