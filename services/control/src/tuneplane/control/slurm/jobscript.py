"""The batch script of a Slurm launch: collectors first, then the training tasks.

On every node of the job, a shell program checks the collector artifact with the node's own
coreutils (nothing of the artifact is trusted before it verifies; no Python is needed on the
node) and then runs its static collector, which reads the job's ticket
from its standard input, refuses a spool root on a shared filesystem, redeems the ticket
and says it is ready. Only once every node's collector is ready do the training tasks
start (task i is member ``rank-<i>``), so the ticket the script holds is spent by then.
When training ends the collectors are told to drain; when Slurm ends the job (cancel,
time limit) they drain within its ``KillWait``. A refusal is written to the job's Comment,
where control reads it. The launch's environment is the training tasks' only: exported once
the collectors are ready, it never reaches sbatch (run by control) nor the collectors (a
tenant's PATH or LD_PRELOAD there would run its code with the ticket in hand).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from tuneplane.contract.slurmlines import READY, REFUSED
from tuneplane.controlplane.slurm_launches import ENVIRONMENT_NAME

#: Runs on the compute node (``sh -c PROGRAM node WORKDIR``) with the node's own coreutils:
#: verify the artifact, then run its static collector. The manifest is trusted only once its
#: sha256 is the digest launched; its files, its target (against ``uname -m``) and that
#: nothing was added are checked from it before anything of the artifact runs.
VERIFY = r"""tp_here=$(hostname)
tp_refuse() {
    printf '%s%s: collector artifact refused: %s\n' "$tp_refused" "$tp_here" "$1"
    exit 3
}
[ "${tp_artifact##*/}" = "$tp_digest" ] ||
    tp_refuse "$tp_artifact is not the artifact launched ($tp_digest)"
cd "$tp_artifact" 2>/dev/null || tp_refuse "$tp_artifact is not a directory this user may enter"
tp_sum=$(sha256sum manifest.json 2>/dev/null | cut -d ' ' -f 1)
[ "$tp_sum" = "$tp_digest" ] || tp_refuse "artifact $tp_artifact: its manifest's sha256 is \
${tp_sum:-unreadable}; the directory name must be that digest (renamed or edited manifest)"
case $(uname -m) in
    x86_64 | amd64) tp_host=x86_64-unknown-linux-musl ;;
    aarch64 | arm64) tp_host=aarch64-unknown-linux-musl ;;
    *) tp_host="$(uname -m), which no collector target runs on" ;;
esac
tp_built=$(sed -n 's/.*"target":"\([^"]*\)".*/\1/p' manifest.json)
[ "$tp_built" = "$tp_host" ] ||
    tp_refuse "artifact $tp_artifact is built for $tp_built; this host runs $tp_host"
tp_files=$(sed -n 's/.*"files":{\([^}]*\)}.*/\1/p' manifest.json | tr ',' '\n' |
    sed -n 's/^"\([A-Za-z0-9._-]*\)":"\([0-9a-f]*\)"$/\1 \2/p')
for tp_name in * .[!.]* ..?*; do
    [ -e "$tp_name" ] || [ -L "$tp_name" ] || continue
    [ ! -L "$tp_name" ] || tp_refuse "artifact $tp_artifact: $tp_name is a symbolic link"
    [ "$tp_name" = manifest.json ] && continue
    tp_known=
    while read -r tp_listed tp_want; do
        [ "$tp_listed" = "$tp_name" ] && tp_known=1
    done <<EOF_LISTED
$tp_files
EOF_LISTED
    [ -n "$tp_known" ] ||
        tp_refuse "artifact $tp_artifact: $tp_name is not in the manifest (added)"
done
while read -r tp_name tp_want; do
    [ -f "$tp_name" ] || tp_refuse "artifact $tp_artifact: $tp_name is missing"
    [ "$(sha256sum "$tp_name" | cut -d ' ' -f 1)" = "$tp_want" ] ||
        tp_refuse "artifact $tp_artifact: $tp_name does not match its sha256 (tampered)"
done <<EOF_FILES
$tp_files
EOF_FILES
cd /
"""


@dataclass(frozen=True, slots=True)
class Job:
    """What the script is written from."""

    launch_id: int
    run_id: str
    nodes: int
    tasks_per_node: int
    command: Sequence[str]
    workdir: str              # empty: a fresh directory per node and start
    spool_root: str
    artifact: Path            # content-addressed: its name is the manifest's sha256
    ticket: str
    control: str              # host:port the compute nodes reach control at
    server_name: str          # TLS name of control, when it differs from the host
    control_ca_pem: str
    collector_environment: Mapping[str, str]  # TUNEPLANE_COLLECTOR_* for the collectors
    environment: Mapping[str, str]            # the launch's, for the training tasks only
    member_template: str = "rank-{rank}"      # the member of task N: {rank} stands for N


def program(job: Job) -> str:
    """The shell program each node runs first (``sh -c PROGRAM node WORKDIR``), with
    nothing but the node's coreutils and the verified artifact."""
    q = shlex.quote
    args = ["--control", job.control, "--spool-root", job.spool_root, "--launch",
            str(job.launch_id), *(["--server-name", job.server_name] if job.server_name
                                  else []), *(["--workdir-given"] if job.workdir else [])]
    environment = {**job.collector_environment,
                   "TUNEPLANE_SLURM_CONTROL_CA": job.control_ca_pem}
    return (f"tp_artifact={q(str(job.artifact))}\ntp_digest={q(job.artifact.name)}\n"
            f"tp_refused={q(REFUSED)}\n" + VERIFY + exports(environment)
            + f'exec "$tp_artifact/tuneplane-collector" slurm-node {shell_words(args)} '
            '--workdir "$1"\n')


def shell_words(args: Sequence[str]) -> str:
    """``args`` as words of a POSIX shell command line, each exactly as given."""
    return " ".join(shlex.quote(arg) for arg in args)


def exports(environment: Mapping[str, str]) -> str:
    """The launch's environment as the script's exports (each value quoted; a name the
    shell cannot take is refused, as the launch itself refused it)."""
    for name in environment:
        if not ENVIRONMENT_NAME.fullmatch(name):
            raise ValueError(f"environment variable {name!r} is not a shell variable name")
    return "".join(f"export {name}={shlex.quote(value)}\n"
                   for name, value in environment.items())


def render(job: Job) -> str:
    q = shlex.quote
    # The launch's TMPDIR, when it gives one, is where the job's own places go.
    tmp = q(job.environment["TMPDIR"]) if job.environment.get("TMPDIR") else \
        '"${TMPDIR:-/tmp}"'
    # Not foretold (job ids come in order): in a shared /tmp another user could make it
    # first, and the collectors refuse a directory not their own.
    workdir = q(job.workdir) if job.workdir else \
        '"$tp_tmp/tuneplane-$SLURM_JOB_ID-${SLURM_RESTART_COUNT:-0}-$(od -An -N8 -tx1 ' \
        '/dev/urandom | tr -d \' \\n\')"'
    training = shell_words(job.command)
    return f'''#!/bin/sh
# Tuneplane Slurm launch {job.launch_id}: run {job.run_id}, {job.nodes} node(s) x \
{job.tasks_per_node} task(s). Written by tuneplane-control.
set -u
tp_nodes={job.nodes}
tp_tasks={job.tasks_per_node}
tp_tmp={tmp}
# The job's output: a file of its own made here (Slurm's --output is /dev/null), as a name
# foretold in a shared /tmp could be another user's symlink, which Slurm follows, truncating.
tp_out=$(mktemp "$tp_tmp/tuneplane-$SLURM_JOB_ID.out.XXXXXX") && exec >"$tp_out" 2>&1
tp_workdir={workdir}
tp_log=$(mktemp "$tp_tmp/tuneplane-collectors-$SLURM_JOB_ID.XXXXXX") || exit 1
tp_comment() {{
    echo "tuneplane: $1" >&2
    scontrol update JobId="$SLURM_JOB_ID" Comment="tuneplane: $1" >/dev/null 2>&1 || :
}}
tp_program={q(program(job))}
# One collector per node, from the artifact verified there; the ticket on its stdin.
printf '%s\\n' {q(job.ticket)} | srun --overlap --input=all --kill-on-bad-exit=0 \\
    -N "$tp_nodes" -n "$tp_nodes" --ntasks-per-node=1 --job-name=tuneplane-collector \\
    /bin/sh -c "$tp_program" tuneplane-node "$tp_workdir" >"$tp_log" 2>&1 &
tp_collectors=$!
tp_end() {{
    wait "$tp_collectors"
    cat "$tp_log"
    rm -f "$tp_log"
}}
# Slurm ends the job (cancelled, time limit): the collectors drain within its KillWait.
trap 'tp_end; exit 143' TERM
until [ "$(grep -c '^{READY}' "$tp_log")" -ge "$tp_nodes" ]; do
    if ! kill -0 "$tp_collectors" 2>/dev/null; then
        cat "$tp_log" >&2
        tp_why=$(sed -n 's/^{REFUSED}//p' "$tp_log" | head -n 1)
        tp_comment "refused: ${{tp_why:-a collector ended before it was ready}}"
        rm -f "$tp_log"
        exit 1
    fi
    sleep 0.2
done
TUNEPLANE_ATTEMPT=$(sed -n 's/^{READY} attempt=\\([0-9]*\\).*/\\1/p' "$tp_log" | head -n 1)
export TUNEPLANE_ATTEMPT
# The launch's environment: the training tasks' only, from here on.
{exports(job.environment)}srun --overlap --kill-on-bad-exit=1 -N "$tp_nodes" \\
    -n $((tp_nodes * tp_tasks)) --ntasks-per-node="$tp_tasks" --distribution=block \\
    --chdir="$tp_workdir" \\
    /bin/sh -c 'TUNEPLANE_MEMBER="$1$SLURM_PROCID$2"; export TUNEPLANE_MEMBER; shift 2
exec "$@"' tuneplane-task {shell_words(job.member_template.split("{rank}", 1))} {training}
tp_code=$?
# Training ended: the collectors read to the end and drain (step 0 is theirs).
scancel --signal=TERM "$SLURM_JOB_ID.0" 2>/dev/null || kill -TERM "$tp_collectors"
tp_end
[ "$tp_code" -eq 0 ] || tp_comment "training tasks exited with $tp_code"
exit "$tp_code"
'''


def sbatch_options(job: Job, *, partition: str, time_limit: str, requeue: bool) -> list[str]:
    """sbatch's options for the job (the script goes on its standard input)."""
    place = job.workdir or "/tmp"
    options = [f"--job-name=tuneplane-{job.launch_id}", f"--nodes={job.nodes}",
               f"--ntasks-per-node={job.tasks_per_node}", f"--chdir={place}",
               "--output=/dev/null", "--requeue" if requeue else "--no-requeue"]
    if partition:
        options.append(f"--partition={partition}")
    if time_limit:
        options.append(f"--time={time_limit}")
    return options
