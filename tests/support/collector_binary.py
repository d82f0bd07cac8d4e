"""The collector's static binaries (collector/binary), built by scripts/collector-binary
before pytest (``TUNEPLANE_COLLECTOR_BINARY_DIR``, cargo's target directory): one per
target, the aarch64 one run here under Debian's qemu-user-static."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

#: Each target and what runs its binary on this (x86_64) host.
TARGETS = {"x86_64-unknown-linux-musl": (), "aarch64-unknown-linux-musl": ("qemu-aarch64-static",)}


def binary(target: str) -> Path:
    built = os.environ.get("TUNEPLANE_COLLECTOR_BINARY_DIR", "")
    if not built:
        pytest.fail("TUNEPLANE_COLLECTOR_BINARY_DIR is not set: scripts/test builds the "
                    "binaries (scripts/collector-binary) and sets it", pytrace=False)
    path = Path(built) / target / "release" / "tuneplane-collector"
    if not path.is_file():
        pytest.fail(f"{path} is missing: run scripts/collector-binary", pytrace=False)
    return path


def failpoints_binary() -> Path:
    """The host build with the ``failpoints`` feature: crash points for fault tests."""
    built = os.environ.get("TUNEPLANE_COLLECTOR_BINARY_DIR", "")
    path = Path(built) / "failpoints" / "tuneplane-collector"
    if not built or not path.is_file():
        pytest.fail(f"{path} is missing: scripts/collector-binary builds it", pytrace=False)
    return path


def command(target: str) -> list[str]:
    """How to run ``target``'s binary here."""
    runner = TARGETS[target]
    if runner and shutil.which(runner[0]) is None:
        pytest.fail(f"{runner[0]} is missing: scripts/collector-binary installs it",
                    pytrace=False)
    return [*runner, str(binary(target))]


def run(target: str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*command(target), *args], capture_output=True, timeout=timeout,
                          check=False)
