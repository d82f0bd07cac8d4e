"""scripts/slurm without starting a cluster: ``status`` and ``env`` of an empty state folder,
and the configuration it writes."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from scripts import slurm
from tests.support.environment import ROOT


def run_slurm(state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(ROOT / "scripts" / "slurm"), *args], capture_output=True,
                          text=True, check=False, timeout=60,
                          env={**os.environ, "TUNEPLANE_SLURM_DIR": str(state)})


def test_status_of_an_empty_folder_is_every_daemon_stopped(tmp_path: Path) -> None:
    done = run_slurm(tmp_path, "status")
    assert done.returncode == 0, done.stderr
    assert done.stdout == ("munged\tstopped\nslurmctld\tstopped\n"
                           "slurmd-tuneplane-node\tstopped\nslurmd-tuneplane-node-2\tstopped\n")


def test_env_names_the_configuration(tmp_path: Path) -> None:
    done = run_slurm(tmp_path, "env")
    assert (done.returncode, done.stdout) == (0, f"export SLURM_CONF={tmp_path}/slurm.conf\n")


def test_the_configuration_has_both_nodes_on_their_ports() -> None:
    text = slurm.config(6817, [6818, 6819])
    assert "SlurmctldPort=6817" in text.splitlines()
    nodes = [line for line in text.splitlines() if line.startswith("NodeName=")]
    assert [line.split()[0] for line in nodes] == ["NodeName=tuneplane-node",
                                                   "NodeName=tuneplane-node-2"]
    assert ["Port=6818" in nodes[0], "Port=6819" in nodes[1]] == [True, True]
    assert f"SlurmctldPidFile={slurm.DATA / 'slurmctld.pid'}" in text
