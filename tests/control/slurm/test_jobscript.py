"""The Slurm job script: what it hands the shell reaches the training task word for word,
and the program each node runs first checks the artifact with nothing of the artifact's
before it runs anything from it."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tuneplane.control.slurm import jobscript

NASTY = ["python3", "it's", '"quoted"', "$HOME", "`id`", "$(id)", "a b\tc", "line\nbreak",
         ";", "&&", "|", "*", "~", "\\", "--", "-e", "", "ünïcode"]


def job(artifact: Path, command: list[str] | None = None, workdir: str = "") -> jobscript.Job:
    return jobscript.Job(
        launch_id=7, run_id="run-1", nodes=2, tasks_per_node=4,
        command=command or ["python3", "train.py"], workdir=workdir,
        spool_root="/local/tp spool", artifact=artifact, ticket="t'ck\"et", control="ctl:8443",
        server_name="", control_ca_pem="-----BEGIN CERTIFICATE-----\nX\n",
        collector_environment={"TUNEPLANE_COLLECTOR_MOUNT_TABLE": "/etc/mt'ab"})


def test_the_training_command_reaches_the_task_word_for_word() -> None:
    words = jobscript.shell_words(NASTY)
    done = subprocess.run(["sh", "-c", f"printf '%s\\0' {words}"], capture_output=True,
                          check=True)
    assert done.stdout.split(b"\0")[:-1] == [w.encode() for w in NASTY]


def test_the_script_is_valid_shell_whatever_the_launch_holds(tmp_path: Path) -> None:
    script = jobscript.render(job(tmp_path / ("a" * 64), NASTY, workdir="/work/it's here"))
    assert subprocess.run(["sh", "-n"], input=script.encode(), check=False).returncode == 0
    assert "tuneplane-task rank- '' " + jobscript.shell_words(NASTY) in script
    assert "--chdir=\"$tp_workdir\"" in script
    assert "tp_workdir='/work/it'\"'\"'s here'" in script


def run_program(artifact: Path) -> subprocess.CompletedProcess[str]:
    program = jobscript.program(job(artifact))
    return subprocess.run(["python3.11", "-I", "-S", "-c", program, "/tmp/workdir"],
                          capture_output=True, text=True, check=False, timeout=60,
                          env={"PATH": "/usr/bin:/bin"})  # not a Slurm step


def test_the_node_program_refuses_a_tampered_or_renamed_artifact(
        collector_artifact: Path, tmp_path: Path) -> None:
    tampered = tmp_path / "tampered" / collector_artifact.name
    shutil.copytree(collector_artifact, tampered, symlinks=True)
    (tampered / "bin" / "cli.py").write_text("import os\nos.system('id')\n")
    done = run_program(tampered)
    assert done.returncode == 3
    assert done.stdout.startswith(jobscript.REFUSED)
    assert "collector artifact refused: " in done.stdout
    assert "bin/cli.py does not match its sha256 (tampered)" in done.stdout
    renamed = tmp_path / "renamed" / ("0" * 64)
    shutil.copytree(collector_artifact, renamed, symlinks=True)
    done = run_program(renamed)
    assert (done.returncode, jobscript.REFUSED in done.stdout) == (3, True)
    assert "its manifest's sha256 is" in done.stdout


def test_the_node_program_runs_the_verified_artifacts_collector(
        collector_artifact: Path) -> None:
    done = run_program(collector_artifact)
    # Verified, then the collector ran: outside a Slurm step it refuses, saying why.
    assert done.returncode == 2, done.stderr
    assert done.stdout.startswith(jobscript.REFUSED), done.stdout
    assert "not run as a Slurm job step ('SLURM_JOB_ID' unset or malformed)" in done.stdout


def test_sbatch_options_name_the_job_and_its_shape(tmp_path: Path) -> None:
    options = jobscript.sbatch_options(job(tmp_path), partition="gpu", time_limit="1:00:00",
                                       requeue=False)
    assert options == ["--job-name=tuneplane-7", "--nodes=2", "--ntasks-per-node=4",
                       "--chdir=/tmp", "--output=tuneplane-%j.out", "--no-requeue",
                       "--partition=gpu", "--time=1:00:00"]
