"""`docker compose --profile gateway up` for real: the images built from compose/Dockerfile
as a user builds them, the stack started with three projectors, and used from the host as
an execution host would: a collector sends a TensorBoard run and a JSONL run to the
published telemetry port with the gateway CA handed out by ``tuneplane-admin gateway-ca``,
and the curves are read back over the published web port. Then a projector and Kafka are
SIGKILLed mid-run, the whole stack is taken down (volumes kept) and brought up again, the
topic is archived to the object store and trimmed below, and it is replayed into fresh read
models inside compose (its archive, then Kafka): every curve stays exact. The stack is
healthy only once the data lifecycle's services (retention, purge, archive) have each had a
pass succeed.

The stack is built and started with the operator guide's `sh compose` commands (the
README's too) in a copy of the checkout. Needs a Docker Engine and the base images
(scripts/test starts ``dockerd`` and runs scripts/compose-images); fails, never skips,
without them. Prints each step's time.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.compose import Stack
from tests.support.environment import ROOT
from tests.support.guide import blocks, marked
from tests.support.processes import collector_args
from tests.support.readback import TAGS, Web, jsonl_truth, send_two_runs
from tuneplane.telemetry.v1.identity import MemberKey

pytestmark = pytest.mark.usefixtures("docker_engine")

#: The collector artifact's directory name on execution hosts (not used here).
COLLECTOR_DIGEST = "0" * 64


def docker_engine_fails() -> str | None:
    try:
        done = subprocess.run(["docker", "info"], capture_output=True, text=True, timeout=30,
                              check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    return None if done.returncode == 0 else done.stderr.strip()[-500:]


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory,
          pytestconfig: pytest.Config) -> Iterator[Stack]:
    problem = docker_engine_fails()
    if problem is not None:
        pytest.fail(f"no Docker Engine answers ({problem}); scripts/test starts dockerd and "
                    "builds the base images (scripts/compose-images)", pytrace=False)
    stack = Stack(tmp_path_factory.mktemp("compose"), COLLECTOR_DIGEST)
    try:
        # As the operator guide (and the README) say: build and start, three projectors.
        for block in marked("compose"):
            stack.shell(block, "the guide's compose commands (build, up)")
        stack.up("wait until healthy")
        yield stack
    except BaseException:
        print(stack.logs())
        raise
    finally:
        stack("down", "-v", "--remove-orphans", what="down -v")
        # Shown in CI's output, passing or not: around pytest's output capture.
        line = "compose timings: " + ", ".join(f"{w} {s:.1f} s" for w, s in stack.timings)
        capture = pytestconfig.pluginmanager.get_plugin("capturemanager")
        with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
            print(f"\n{line}", flush=True)


def admin_web(stack: Stack) -> Web:
    """The published web port, as an admin's API client."""
    token = stack.admin("user-add", "--admin", "--user",
                        f"tester-{uuid.uuid4().hex[:6]}").strip().splitlines()[-1]
    return Web(f"http://127.0.0.1:{stack.web_port}", token)


def sigkill(*containers: str) -> None:
    """SIGKILLs the containers and checks that they stopped."""
    subprocess.run(["docker", "kill", "--signal", "KILL", *containers], check=True,
                   capture_output=True)
    states = subprocess.run(["docker", "inspect", "--format", "{{.State.Running}}",
                             *containers], capture_output=True, text=True, check=True)
    assert states.stdout.split() == ["false"] * len(containers), \
        f"the SIGKILLs took no effect: {states.stdout}"


def test_the_readme_deploys_with_the_guides_compose_commands() -> None:
    """The README's Docker block is the guide's, which the stack below is started with."""
    readme = [body for language, _, body in blocks((ROOT / "README.md").read_text())
              if language == "sh" and "docker compose" in body]
    assert readme == marked("compose")


def send(stack: Stack, work: Path, member: MemberKey, sources: dict[str, Path],
         *extra: str) -> list[str]:
    """A collector's arguments for ``member``, with a workload token from the admin image
    and the gateway CA it handed out."""
    token = work / f"{member.run_id}.token"
    token.write_text(stack.admin("token", "--run", member.run_id, "--attempt",
                                 str(member.attempt), "--member", member.member).strip())
    return collector_args(stack.telemetry_port, work, token, member, work / member.run_id,
                          sources, *extra)


def test_the_gateway_takes_telemetry_survives_kills_restarts_and_replays(
        stack: Stack, tmp_path: Path) -> None:
    (tmp_path / "ca.pem").write_text(stack.admin("gateway-ca"))
    assert "BEGIN CERTIFICATE" in (tmp_path / "ca.pem").read_text()
    web = admin_web(stack)
    prefix = f"compose-{uuid.uuid4().hex[:6]}"

    # A TensorBoard run and a JSONL run, from the host through the published 8444.
    started = time.monotonic()
    runs = send_two_runs(lambda member, sources, *extra: send(stack, tmp_path, member, sources,
                                                              *extra), web, prefix, tmp_path)
    stack.timings.append(("two runs sent and read back", time.monotonic() - started))

    # Kafka and a projector SIGKILLed just before a run starts (the collector's first batch
    # is on the wire within milliseconds of its start): the collector keeps its batches
    # (ingest ACKs only what Kafka holds) until Kafka is back. Then another projector is
    # SIGKILLed while the run is being projected.
    chaos = MemberKey(f"{prefix}-chaos", 1, "rank-0")
    chaos_truth = jsonl_truth(tmp_path / "chaos.jsonl", range(100_000))
    chaos_args = [*send(stack, tmp_path, chaos, {"train": tmp_path / "chaos.jsonl"},
                        "--max-batch-points", "500"), "--exit-when-idle"]
    sigkill(stack.container("kafka"), stack.container("projector", 2))
    said = tmp_path / "chaos.log"  # a file, not a pipe no one reads while the test waits
    with said.open("w") as log:
        collector = subprocess.Popen(chaos_args, stdout=subprocess.DEVNULL, stderr=log)
    try:
        # The barrier: ingest has failed the collector (Kafka down, it can neither hold a
        # batch nor say what earlier spools of the member hold), so the collector has tried
        # and holds its batches; then nothing may be stored.
        deadline = time.monotonic() + 120
        while not any(failed in said.read_text() for failed in (
                "retrying batch", "nothing is sent before the member's checkpoints are known")):
            assert collector.poll() is None, "the collector finished though Kafka was down"
            assert time.monotonic() < deadline, "ingest failed no call within 120 s: " + \
                said.read_text()[-3000:]
            time.sleep(0.1)
        assert collector.poll() is None, "the collector finished though Kafka was down"
        assert web.series(chaos, "train", "loss") == [], "a point was stored though Kafka was down"
        stack.up("up again after SIGKILLing Kafka and a projector")
        deadline = time.monotonic() + 120
        while not web.series(chaos, "train", "loss"):  # projection under way (the collector
            # may be done by now: it is once Kafka holds every batch)
            assert time.monotonic() < deadline, "no point of the run stored within 120 s"
            time.sleep(0.05)
        sigkill(stack.container("projector", 1))
        stack.up("up again after SIGKILLing a projector mid-projection")
        collector.wait(timeout=600)
        errors = said.read_text()
        assert collector.returncode == 0, errors[-3000:]
        assert " 0 problems, 0 batches not delivered" in errors, errors[-3000:]
    finally:  # a collector left running (a failed check above) is stopped
        if collector.poll() is None:
            collector.kill()
        collector.wait()
    web.wait_exact(chaos, "train", chaos_truth)

    # The whole stack down (volumes kept) and up again: everything is still there.
    stack("down", what="down (volumes kept)")
    stack.up("up after down")
    for member, source, truth in runs:
        web.wait_exact(member, source, truth, seconds=30)
    web.wait_exact(chaos, "train", chaos_truth, seconds=30)

    # The topic replayed into fresh read models inside compose: the same checksums.
    def checksum() -> dict[str, str]:
        out = stack("run", "--rm", "--no-deps", "-T", "projector", "checksum", "--run-prefix",
                    prefix).stdout
        sums: dict[str, str] = json.loads(out)
        return sums
    before = checksum()
    # The topic archived and trimmed below (the archive service ran a pass at each start:
    # stopped, so that this pass is not refused as busy): Kafka no longer holds the runs'
    # first batches, and the rebuild reads them from the archive.
    stack("stop", "archive")
    archived = json.loads(stack(
        "run", "--rm", "--no-deps", "-T", "archive", "archive", "--trim",
        "--keep-group-if-consumed", "tuneplane-exporter", what="archive and trim").stdout)
    assert sum(archived["trimmed"].values()) >= 100_000 * len(TAGS) // 500, archived
    report = json.loads(stack("run", "--rm", "--no-deps", "-T", "projector", "rebuild",
                              what="rebuild").stdout.splitlines()[-1])
    assert report["swapped"], report
    assert report["poison"] == 0, report
    assert report["applied"] >= 100_000 * len(TAGS) // 500, report  # the chaos run's batches
    assert checksum() == before
    web.wait_exact(chaos, "train", chaos_truth, seconds=30)
