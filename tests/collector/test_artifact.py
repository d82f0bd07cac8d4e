"""The collector artifact: reproducible, content-addressed, verified, isolated when run."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.environment import ROOT
from tests.support.truth import write_jsonl
from tuneplane.collector.artifact import MANIFEST, ArtifactError, Target, build, verify


@pytest.fixture(scope="module")
def built(collector_artifact: Path) -> Path:
    return collector_artifact


@pytest.fixture
def copy(built: Path, tmp_path: Path) -> Path:
    target = tmp_path / built.name
    shutil.copytree(built, target, symlinks=True)
    return target


def test_the_same_sources_build_the_same_digest(built: Path, tmp_path: Path) -> None:
    again = build(ROOT, tmp_path)
    assert again.name == built.name
    manifest = verify(built)
    assert manifest["target"] == dataclasses.asdict(Target.of_this_host())
    assert "bin/tuneplane-collector" in manifest["files"]
    assert manifest["programs"] == ["bin/tuneplane-collector", "bin/tuneplane-node"]


def test_it_ships_bytecode_that_no_timestamp_invalidates(built: Path) -> None:
    files = verify(built)["files"]
    tag = sys.implementation.cache_tag
    modules = [f for f in files if f.startswith("site-packages/") and f.endswith(".py")]
    assert "site-packages/tuneplane/collector/cli.py" in modules
    missing = [m for m in modules
               if "{}/__pycache__/{}.{}.pyc".format(*m.rsplit("/", 1), tag).replace(
                   ".py.", ".", 1) not in files]
    assert not missing, f"modules without bytecode: {missing[:5]}"
    for name in (f for f in files if f.endswith(".pyc")):
        flags = int.from_bytes((built / name).read_bytes()[4:8], "little")
        assert flags == 0b01, f"{name}: not unchecked-hash bytecode (flags {flags:#b})"


def test_it_ships_the_compiled_reader(built: Path) -> None:
    site = built / "site-packages"
    assert list((site / "tuneplane" / "collector").glob("_native.*.so"))
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-B", "-c", "import sys; sys.path[:0] = [sys.argv[1]]; "
         "from tuneplane.collector import native; assert native.compiled() is not None; "
         "print(sys.modules['tuneplane.collector._native'].__file__)", str(site)],
        capture_output=True, text=True, check=True)
    assert done.stdout.startswith(str(site))


def test_it_runs_isolated_from_the_training_environment(built: Path, tmp_path: Path) -> None:
    poison = tmp_path / "poison"
    poison.mkdir()
    for module in ("orjson", "grpc", "tuneplane", "yaml"):
        (poison / f"{module}.py").write_text("raise ImportError('the training env leaked in')")
    write_jsonl(tmp_path / "m.jsonl", range(3), ["loss"])
    done = subprocess.run(
        [str(built / "bin" / "tuneplane-collector"), "read", str(tmp_path / "m.jsonl")],
        capture_output=True, text=True, check=False, cwd=poison,
        env={**os.environ, "PYTHONPATH": str(poison), "PYTHONHOME": str(poison / "nowhere"),
             "PYTHONUSERBASE": str(poison)})
    assert done.returncode == 0, done.stderr
    assert [json.loads(line)["step"] for line in done.stdout.splitlines()] == [0, 1, 2]
    agent = subprocess.run([str(built / "bin" / "tuneplane-node"), "--help"],
                           capture_output=True, text=True, check=False, cwd=poison,
                           env={**os.environ, "PYTHONPATH": str(poison)})
    assert agent.returncode == 0, agent.stderr  # the node agent ships in the artifact too
    assert "enroll" in agent.stdout
    verify(built)  # running it wrote nothing into it


def test_a_tampered_file_is_refused(copy: Path) -> None:
    launcher = copy / "site-packages" / "tuneplane" / "collector" / "cli.py"
    launcher.write_text(launcher.read_text() + "\n# changed\n")
    with pytest.raises(ArtifactError, match=r"cli\.py does not match its sha256 \(tampered\)"):
        verify(copy)


def test_an_added_file_is_refused(copy: Path) -> None:
    (copy / "site-packages" / "sitecustomize.py").write_text("print('hi')")
    with pytest.raises(ArtifactError, match=r"sitecustomize\.py is not in the manifest"):
        verify(copy)


def test_a_missing_file_is_refused(copy: Path) -> None:
    (copy / "bin" / "cli.py").unlink()
    with pytest.raises(ArtifactError, match=r"bin/cli\.py is missing"):
        verify(copy)


def test_a_renamed_directory_or_edited_manifest_is_refused(copy: Path) -> None:
    renamed = copy.rename(copy.with_name("latest"))
    with pytest.raises(ArtifactError, match="directory name must be that digest"):
        verify(renamed)


THIS = Target.of_this_host()


@pytest.mark.parametrize(("change", "reason"), [
    ({"arch": "other-arch"}, f"built for arch {THIS.arch}; this host has other-arch"),
    ({"python_abi": "cpython-399"},
     f"built for Python ABI {THIS.python_abi}; this host has cpython-399"),
    ({"os": "darwin"}, f"built for OS {THIS.os}; this host has darwin"),
    ({"libc": "glibc 2.1"}, f"needs {THIS.libc}; this host has glibc 2.1"),
    ({"libc": "musl 1.2"}, f"needs {THIS.libc}; this host has musl 1.2"),
])
def test_a_host_of_another_target_is_refused(built: Path, change: dict[str, str],
                                             reason: str) -> None:
    host = dataclasses.replace(THIS, **change)
    with pytest.raises(ArtifactError, match=re.escape(reason)):
        verify(built, host)


def test_verify_reads_the_target_of_the_python_that_will_run_it(built: Path) -> None:
    assert Target.of_interpreter(shutil.which("python3") or "python3").os == "linux"
    with pytest.raises(ArtifactError, match="cannot run the Python"):
        Target.of_interpreter("/nonexistent/python")
    assert (built / MANIFEST).exists()
