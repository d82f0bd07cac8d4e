"""The collector artifact: the static binary of one target in a directory named by its
manifest's sha256; reproducible, verified before it runs (by the binary, by the node agent's
``tuneplane.contract.artifact``), and refused on a host of another target with the reason."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.collector_binary import HOST_TARGET, TARGETS, artifact, binary, run
from tests.support.truth import write_jsonl
from tuneplane.contract.artifact import MANIFEST, ArtifactError, host_target, verify

ARM = "aarch64-unknown-linux-musl"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("artifacts")
    return {target: artifact(target, out) for target in TARGETS}


@pytest.fixture
def copy(built: dict[str, Path], tmp_path: Path) -> Path:
    target = tmp_path / built[HOST_TARGET].name
    shutil.copytree(built[HOST_TARGET], target)
    return target


def test_it_holds_the_static_binary_and_a_manifest_naming_it(built: dict[str, Path]) -> None:
    for target, directory in built.items():
        data = (directory / MANIFEST).read_bytes()
        assert directory.name == hashlib.sha256(data).hexdigest()
        manifest = json.loads(data)
        assert data == json.dumps(manifest, sort_keys=True, separators=(",", ":")).encode()
        assert manifest == {"format": 2, "name": "tuneplane-collector",
                            "entry_point": "tuneplane-collector", "target": target,
                            "files": {"tuneplane-collector": hashlib.sha256(
                                binary(target).read_bytes()).hexdigest()}}
        assert sorted(p.name for p in directory.iterdir()) == [MANIFEST, "tuneplane-collector"]
        assert verify(directory, target) == manifest
    assert host_target() == HOST_TARGET


def test_the_same_binary_builds_the_same_digest(built: dict[str, Path], tmp_path: Path) -> None:
    assert artifact(HOST_TARGET, tmp_path).name == built[HOST_TARGET].name
    again = artifact(HOST_TARGET, built[HOST_TARGET].parent)  # already there: verified, kept
    assert again == built[HOST_TARGET]


def test_two_builds_from_other_places_give_the_same_digest(built: dict[str, Path],
                                                          tmp_path: Path) -> None:
    """scripts/collector-binary builds the x86_64 binary a second time, from a copy of the
    sources elsewhere into a target directory of its own (paths remapped, as on any other
    machine): the same bytes, so the same artifact."""
    twin_dir = os.environ.get("TUNEPLANE_COLLECTOR_TWIN_DIR", "")
    twin = Path(twin_dir) / HOST_TARGET / "release" / "tuneplane-collector"
    if not twin_dir or not twin.is_file():
        pytest.fail(f"{twin} is missing: scripts/collector-binary builds it", pytrace=False)
    assert twin.resolve() != binary(HOST_TARGET).resolve()
    done = run(HOST_TARGET, "artifact", "build", "--target", HOST_TARGET, "--out",
               str(tmp_path), "--binary", str(twin))
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.decode().strip()).name == built[HOST_TARGET].name


def test_the_binary_runs_with_nothing_of_the_host(built: dict[str, Path],
                                                  tmp_path: Path) -> None:
    write_jsonl(tmp_path / "m.jsonl", range(3), ["loss"])
    done = subprocess.run([str(built[HOST_TARGET] / "tuneplane-collector"), "read",
                           str(tmp_path / "m.jsonl")], capture_output=True, text=True,
                          env={}, cwd="/", check=False)
    assert done.returncode == 0, done.stderr
    assert [json.loads(line)["step"] for line in done.stdout.splitlines()] == [0, 1, 2]
    verify(built[HOST_TARGET])  # running it wrote nothing into it


def edit(directory: Path) -> None:
    with (directory / "tuneplane-collector").open("r+b") as binary_file:
        binary_file.seek(4096)
        binary_file.write(b"\xcc")


def link(directory: Path) -> None:
    """The binary moved out, a link to it left in its place."""
    (directory / "tuneplane-collector").rename(directory.parent / "elsewhere")
    (directory / "tuneplane-collector").symlink_to(directory.parent / "elsewhere")


CHANGES: dict[str, tuple[Callable[[Path], object], str]] = {
    "edited": (edit, "tuneplane-collector does not match its sha256 (tampered)"),
    "added": (lambda d: (d / "libc.so.6").write_text("x"),
              "libc.so.6 is not in the manifest (added)"),
    "removed": (lambda d: (d / "tuneplane-collector").unlink(), "tuneplane-collector is missing"),
    "renamed": (lambda d: d.rename(d.with_name("latest")),
                "the directory name must be that digest"),
    "linked": (link, "tuneplane-collector is a symbolic link"),
}


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_a_changed_artifact_is_refused_by_the_binary_and_the_node_agent(
        copy: Path, change: str) -> None:
    how, said = CHANGES[change]
    how(copy)
    where = copy if copy.exists() else copy.with_name("latest")
    with pytest.raises(ArtifactError, match=re.escape(said)):
        verify(where)
    done = run(HOST_TARGET, "artifact", "verify", str(where))
    assert done.returncode == 1
    assert said in done.stderr.decode(), done.stderr


def test_another_targets_artifact_is_refused_with_the_reason(built: dict[str, Path]) -> None:
    arm = built[ARM]
    said = f"artifact {arm} is built for {ARM}; this host runs {HOST_TARGET}"
    with pytest.raises(ArtifactError, match=re.escape(said)):
        verify(arm)
    done = run(HOST_TARGET, "artifact", "verify", str(arm))
    assert (done.returncode, said in done.stderr.decode()) == (1, True), done.stderr
    # The aarch64 binary itself accepts it on an aarch64 host (here: under qemu).
    done = run(ARM, "artifact", "verify", str(arm), "--target", ARM)
    assert done.returncode == 0, done.stderr
    with pytest.raises(ArtifactError, match="no collector target runs on a riscv64 host"):
        host_target("Linux", "riscv64")
    with pytest.raises(ArtifactError, match="the collector runs on Linux; this host runs Darwin"):
        host_target("Darwin", "arm64")


def test_a_binary_is_packed_only_for_its_own_target(tmp_path: Path) -> None:
    done = run(HOST_TARGET, "artifact", "build", "--target", HOST_TARGET, "--out",
               str(tmp_path), "--binary", str(binary(ARM)))
    assert done.returncode == 1
    assert f"is built for {ARM}, not {HOST_TARGET}" in done.stderr.decode()
    script = tmp_path / "collector.sh"
    script.write_text("#!/bin/sh\n")
    for given, said in ((["--binary", str(script)], "is not a 64-bit little-endian ELF"),
                        (["--binary", shutil.which("sh") or "/bin/sh"],
                         "is dynamically linked"),
                        (["--target", "riscv64gc-unknown-linux-musl"], "is none of")):
        args = ["--target", HOST_TARGET, *given] if given[0] == "--binary" else given
        done = run(HOST_TARGET, "artifact", "build", *args, "--out", str(tmp_path))
        assert done.returncode == 1
        assert said in done.stderr.decode(), (given, done.stderr)
    assert [p.name for p in tmp_path.iterdir()] == ["collector.sh"]  # nothing half-made
