"""The collector never imports a training framework or TensorBoard."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

from tests.support.environment import ROOT

FORBIDDEN = ("tensorflow", "tensorboard", "torch", "tensorboardX", "jax", "numpy")


def test_collector_modules_and_read_import_no_framework(tmp_path: Path) -> None:
    from tensorboardX import SummaryWriter
    writer = SummaryWriter(logdir=str(tmp_path))
    writer.add_scalar("loss", 0.5, 1)
    writer.add_histogram("w", [1.0, 2.0, 3.0], 1)
    writer.close()
    program = f"""
import pkgutil, sys, importlib
import tuneplane.collector as package
for module in pkgutil.iter_modules(package.__path__):
    importlib.import_module("tuneplane.collector." + module.name)
from tuneplane.collector import cli
assert cli.main(["read", {str(tmp_path)!r}]) == 0
loaded = sorted(m for m in sys.modules if m.split(".")[0] in {FORBIDDEN!r})
print("LOADED", loaded)
"""
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert '"kind":"scalar"' in done.stdout
    assert '"kind":"histogram"' in done.stdout
    assert "LOADED []" in done.stdout


def test_collector_distribution_depends_on_no_framework_or_service_client() -> None:
    project = tomllib.loads((ROOT / "collector" / "pyproject.toml").read_text())["project"]
    names = {dep.split(">")[0].split("=")[0].split("[")[0].strip().lower()
             for dep in project["dependencies"]}
    assert not names & {"tensorflow", "tensorboard", "torch", "tensorboardx", "numpy",
                        "aiokafka", "asyncpg", "boto3", "faust-streaming"}
