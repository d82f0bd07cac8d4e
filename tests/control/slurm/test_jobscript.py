"""The job script, run by /bin/sh with stand-ins for srun, scontrol and scancel that record
each step's arguments, environment and standard input: what reaches the collectors, what
reaches the training tasks, and nasty inputs arriving as they were given; and the program
each node runs first, which checks the artifact with nothing of the artifact's before it
runs anything from it."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

from tests.support.collector_binary import artifact
from tuneplane.contract.slurmlines import REFUSED
from tuneplane.control.slurm import jobscript

#: srun's stand-in: the collectors' step records itself and says ready; the training step
#: runs its command as task 0.
SRUN = f'''#!{sys.executable}
import json, os, sys
args = sys.argv[1:]
i = 0
while i < len(args) and args[i].startswith("-"):
    i += 2 if args[i] in ("-N", "-n") else 1
step = "collectors" if "--job-name=tuneplane-collector" in args else "training"
record = {{"args": args[i:], "env": dict(os.environ),
          "stdin": sys.stdin.read() if step == "collectors" else ""}}
with open(os.path.join(os.environ["RECORDS"], step + ".json"), "w") as out:
    json.dump(record, out)
if step == "collectors":
    os.makedirs(args[-1], exist_ok=True)  # as the collector makes the working directory
    print("tuneplane-collector: ready attempt=7 node=0 members=rank-0", flush=True)
    sys.exit(0)
os.environ["SLURM_PROCID"] = "0"
os.chdir(next(a[len("--chdir="):] for a in args if a.startswith("--chdir=")))
os.execv(args[i], args[i:])
'''
#: The training command: records what it was given.
TASK = f'''#!{sys.executable}
import json, os, sys
with open(os.path.join(os.environ["RECORDS"], "task.json"), "w") as out:
    json.dump({{"argv": sys.argv[1:], "env": dict(os.environ), "cwd": os.getcwd()}}, out)
'''
NASTY = ["$(touch pwned)", "`touch pwned`", "a'b", 'a"b', "a\nb", "; touch pwned", "*", "",
         "-n", "\\", "${HOME}", "é ☃", "%j %u"]


def job(tmp_path: Path, environment: dict[str, str], command: list[str]) -> jobscript.Job:
    return jobscript.Job(
        launch_id=1, run_id="r-1", nodes=1, tasks_per_node=1, command=command,
        workdir=str(tmp_path / "work dir 'x'"), spool_root=str(tmp_path / "spool $(x)"),
        artifact=tmp_path / ("0" * 64), ticket="eyJ.ticket'$(touch pwned)", control="c:1",
        server_name="", control_ca_pem="PEM", collector_environment={},
        environment=environment)


def run(tmp_path: Path, job: jobscript.Job) -> dict[str, dict[str, object]]:
    bin_dir, records = tmp_path / "bin", tmp_path / "records"
    bin_dir.mkdir()
    records.mkdir()
    (tmp_path / "work dir 'x'").mkdir(exist_ok=True)
    for name, text in (("srun", SRUN), ("train", TASK),
                       ("scontrol", "#!/bin/sh\nexit 0\n"), ("scancel", "#!/bin/sh\nexit 1\n")):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "SLURM_JOB_ID": "42",
           "TMPDIR": str(tmp_path), "RECORDS": str(records)}
    done = subprocess.run(["/bin/sh", "-c", jobscript.render(job)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert not list(tmp_path.rglob("pwned"))
    return {p.stem: json.loads(p.read_text()) for p in records.glob("*.json")}


def test_the_launch_environment_reaches_the_training_tasks_but_not_the_collectors(
        tmp_path: Path) -> None:
    environment = {"LD_PRELOAD": "/home/tenant/evil.so", "PYTHONPATH": "/home/tenant/py",
                   "MY_SETTING": "it's $(touch pwned)\nsecond line"}
    seen = run(tmp_path, job(tmp_path, environment, [str(tmp_path / "bin" / "train")]))
    collectors, task = seen["collectors"]["env"], seen["task"]["env"]
    assert isinstance(collectors, dict)
    assert isinstance(task, dict)
    assert not set(environment) & set(collectors), collectors
    assert {k: task.get(k) for k in environment} == environment
    assert (task["TUNEPLANE_MEMBER"], task["TUNEPLANE_ATTEMPT"]) == ("rank-0", "7")


def test_nasty_command_arguments_paths_and_ticket_arrive_as_given(tmp_path: Path) -> None:
    given = job(tmp_path, {}, [str(tmp_path / "bin" / "train"), *NASTY])
    seen = run(tmp_path, given)
    assert seen["task"]["argv"] == NASTY
    assert seen["task"]["cwd"] == given.workdir
    assert seen["collectors"]["stdin"] == given.ticket + "\n"
    program_args = seen["collectors"]["args"]
    assert isinstance(program_args, list)
    assert program_args[:2] == ["/bin/sh", "-c"]
    assert program_args[-2:] == ["tuneplane-node", given.workdir]
    assert f"--spool-root {shlex.quote(given.spool_root)}" in program_args[2]


def test_the_default_working_directory_cannot_be_foretold(tmp_path: Path) -> None:
    """Job ids come in order: below a shared /tmp, another tenant's process could make
    tuneplane-<job>-<start> first, and the collector, refusing a directory not its own,
    would fail the job."""
    made = set()
    for place in (tmp_path / "a", tmp_path / "b"):
        place.mkdir()
        given = replace(job(place, {}, [str(place / "bin" / "train")]), workdir="")
        args = run(place, given)["collectors"]["args"]
        assert isinstance(args, list)
        assert args[-1].startswith(f"{place}/tuneplane-42-0-"), args[-1]
        assert len(args[-1]) >= len(f"{place}/tuneplane-42-0-") + 16
        made.add(args[-1].removeprefix(str(place)))
    assert len(made) == 2


def test_the_jobs_output_is_a_file_of_its_own_never_a_name_another_user_foretells(
        tmp_path: Path) -> None:
    """Slurm opens --output as the job's user, following symlinks and truncating: a name
    foretold in a shared /tmp (job ids come in order) let another user's symlink point the
    job at any file of its user, emptied; or a file of theirs receive its output."""
    given = job(tmp_path, {}, [str(tmp_path / "bin" / "train")])
    options = jobscript.sbatch_options(given, partition="", time_limit="", requeue=True)
    assert [o for o in options if o.startswith(("--output", "--error"))] == [
        "--output=/dev/null"]
    precious = tmp_path / "checkpoint"
    precious.write_text("precious")
    (tmp_path / "tuneplane-42.out").symlink_to(precious)
    run(tmp_path, replace(given, environment={"TMPDIR": str(tmp_path)}))
    assert precious.read_text() == "precious"
    (output,) = tmp_path.glob("tuneplane-42.out.*")
    assert "tuneplane-collector: ready attempt=7" in output.read_text()
    assert output.stat().st_mode & 0o077 == 0


NASTY = ["python3", "it's", '"quoted"', "$HOME", "`id`", "$(id)", "a b\tc", "line\nbreak",
         ";", "&&", "|", "*", "~", "\\", "--", "-e", "", "ünïcode"]


def a_job(artifact: Path, command: list[str] | None = None, workdir: str = "") -> jobscript.Job:
    return jobscript.Job(
        launch_id=7, run_id="run-1", nodes=2, tasks_per_node=4,
        command=command or ["python3", "train.py"], workdir=workdir,
        spool_root="/local/tp spool", artifact=artifact, ticket="t'ck\"et", control="ctl:8443",
        server_name="", control_ca_pem="-----BEGIN CERTIFICATE-----\nX\n",
        collector_environment={"TUNEPLANE_COLLECTOR_MOUNT_TABLE": "/etc/mt'ab"},
        environment={})


def test_the_training_command_reaches_the_task_word_for_word() -> None:
    words = jobscript.shell_words(NASTY)
    done = subprocess.run(["sh", "-c", f"printf '%s\\0' {words}"], capture_output=True,
                          check=True)
    assert done.stdout.split(b"\0")[:-1] == [w.encode() for w in NASTY]


def test_the_script_is_valid_shell_whatever_the_launch_holds(tmp_path: Path) -> None:
    script = jobscript.render(a_job(tmp_path / ("a" * 64), NASTY, workdir="/work/it's here"))
    assert subprocess.run(["sh", "-n"], input=script.encode(), check=False).returncode == 0
    assert "tuneplane-task rank- '' " + jobscript.shell_words(NASTY) in script
    assert "--chdir=\"$tp_workdir\"" in script
    assert "tp_workdir='/work/it'\"'\"'s here'" in script


def run_program(artifact: Path) -> subprocess.CompletedProcess[str]:
    program = jobscript.program(a_job(artifact))
    return subprocess.run(["/bin/sh", "-c", program, "node", "/tmp/workdir"],
                          capture_output=True, text=True, check=False, timeout=60,
                          env={"PATH": "/usr/bin:/bin"})  # not a Slurm step


def test_the_node_program_refuses_a_tampered_or_renamed_artifact(
        collector_artifact: Path, tmp_path: Path) -> None:
    tampered = tmp_path / "tampered" / collector_artifact.name
    shutil.copytree(collector_artifact, tampered, symlinks=True)
    (tampered / "tuneplane-collector").write_text("#!/bin/sh\nid\n")
    done = run_program(tampered)
    assert done.returncode == 3
    assert done.stdout.startswith(REFUSED)
    assert "collector artifact refused: " in done.stdout
    assert "tuneplane-collector does not match its sha256 (tampered)" in done.stdout
    renamed = tmp_path / "renamed" / ("0" * 64)
    shutil.copytree(collector_artifact, renamed, symlinks=True)
    done = run_program(renamed)
    assert (done.returncode, REFUSED in done.stdout) == (3, True)
    assert "its manifest's sha256 is" in done.stdout


def test_the_node_program_runs_the_verified_artifacts_collector(
        collector_artifact: Path) -> None:
    done = run_program(collector_artifact)
    # Verified, then the collector ran: outside a Slurm step it refuses, saying why.
    assert done.returncode == 2, done.stderr
    assert done.stdout.startswith(REFUSED), done.stdout
    assert "not run as a Slurm job step (SLURM_JOB_ID or SLURM_NODEID unset)" in done.stdout


def test_sbatch_options_name_the_job_and_its_shape(tmp_path: Path) -> None:
    options = jobscript.sbatch_options(a_job(tmp_path), partition="gpu", time_limit="1:00:00",
                                       requeue=False)
    assert options == ["--job-name=tuneplane-7", "--nodes=2", "--ntasks-per-node=4",
                       "--chdir=/tmp", "--output=/dev/null", "--no-requeue",
                       "--partition=gpu", "--time=1:00:00"]


def test_the_node_program_refuses_another_targets_artifact_or_one_added_to(
        collector_artifact: Path, tmp_path: Path) -> None:
    arm = artifact("aarch64-unknown-linux-musl", tmp_path / "arm")
    done = run_program(arm)
    assert (done.returncode, done.stdout.startswith(REFUSED)) == (3, True), done
    assert (f"artifact {arm} is built for aarch64-unknown-linux-musl; this host runs "
            "x86_64-unknown-linux-musl") in done.stdout
    def add(directory: Path) -> None:
        (directory / ".profile").write_text("id\n")

    def remove(directory: Path) -> None:
        (directory / "tuneplane-collector").unlink()

    for change, said in ((add, ".profile is not in the manifest (added)"),
                         (remove, "tuneplane-collector is missing")):
        changed = tmp_path / said.split()[0] / collector_artifact.name
        shutil.copytree(collector_artifact, changed, symlinks=True)
        change(changed)
        done = run_program(changed)
        assert (done.returncode, done.stdout.startswith(REFUSED)) == (3, True), done
        assert said in done.stdout, done.stdout


def test_the_node_program_matches_names_exactly_and_refuses_links(
        collector_artifact: Path, tmp_path: Path) -> None:
    def spaced(directory: Path) -> None:
        (directory / "manifest.json tuneplane-collector").write_text("id\n")

    def linked(directory: Path) -> None:
        binary = directory / "tuneplane-collector"
        (tmp_path / "elsewhere").write_bytes(binary.read_bytes())
        binary.unlink()
        binary.symlink_to(tmp_path / "elsewhere")

    for change, said in ((spaced, "manifest.json tuneplane-collector is not in the manifest"),
                         (linked, "tuneplane-collector is a symbolic link")):
        changed = tmp_path / change.__name__ / collector_artifact.name
        shutil.copytree(collector_artifact, changed, symlinks=True)
        change(changed)
        done = run_program(changed)
        assert (done.returncode, done.stdout.startswith(REFUSED)) == (3, True), done
        assert said in done.stdout, done.stdout
