"""``tuneplane-admin durability`` as a deploy runs it: against the real stores of the local
stack (one machine: nothing survives its loss, and --require multi-machine exits 3), against
stores that do not answer (each named, exit 4, no traceback), and its --help."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from tests.support.environment import BIN, Endpoints, free_port
from tuneplane.admin.cli import main
from tuneplane.admin.durability.command import REQUIREMENT_NOT_MET, UNREADABLE


def durability(*args: str, env: dict[str, str] | None = None,
               ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / "tuneplane-admin"), "durability", *args],
                          capture_output=True, text=True, check=False, timeout=120,
                          env={**os.environ, **(env or {})})


def test_help_explains_the_parts_and_the_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["durability", "--help"])
    assert done.value.code == 0
    shown = capsys.readouterr().out
    for said in ("--require {multi-machine}", "--assume PART", "--json",
                 "pg_stat_replication", "min.insync.replicas",
                 f"{REQUIREMENT_NOT_MET}  --require multi-machine is not met",
                 f"{UNREADABLE}  a store could not be read"):
        assert said in shown


def test_stores_that_do_not_answer_are_named_without_a_traceback() -> None:
    kafka, pg, s3 = free_port(), free_port(), free_port()
    done = durability(env={
        "TUNEPLANE_KAFKA_BOOTSTRAP": f"127.0.0.1:{kafka}",
        "TUNEPLANE_DATABASE_URL": f"postgresql://postgres@127.0.0.1:{pg}/tuneplane",
        "TUNEPLANE_S3_ENDPOINT": f"http://127.0.0.1:{s3}", "TUNEPLANE_S3_BUCKET": "tuneplane",
        "AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s"})
    assert done.returncode == UNREADABLE, done.stderr
    errors = done.stderr.splitlines()
    assert [line.split(" could not be read: ")[0] for line in errors] == [
        f"tuneplane-admin durability: {part}" for part in ("kafka", "postgresql", "s3")]
    assert f"127.0.0.1:{kafka}" in errors[0]
    assert f"127.0.0.1:{pg}/tuneplane" in errors[1]
    assert f"http://127.0.0.1:{s3}" in errors[2]
    assert "Traceback" not in done.stderr
    assert f"Kafka: 127.0.0.1:{kafka}: unreachable" in done.stdout


def test_a_missing_setting_is_named() -> None:
    done = durability(env={"TUNEPLANE_KAFKA_BOOTSTRAP": ""})
    assert done.returncode == 2
    assert "tuneplane-admin durability: TUNEPLANE_KAFKA_BOOTSTRAP is not set" in done.stderr


def test_the_local_stack_survives_no_machine_loss(initialised: Endpoints) -> None:
    done = durability("--json")
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    claims = {(c["part"], c["loss"]): c for c in shown["claims"]}
    kafka = claims["kafka", "machine"]
    assert kafka["outcome"] == "loses"
    batches = next(t for t in shown["kafka"]["topics"]
                   if t["name"] == "tuneplane.telemetry.batches.v1")
    if batches["replication"] == 1:  # scripts/services' one broker
        assert "replication 1: one copy, on broker" in kafka["reason"]
        assert claims["kafka", "broker"]["outcome"] == "loses"
    else:  # scripts/services up --brokers 3: three brokers, one machine
        assert "replicas are on this machine (loopback)" in kafka["reason"]
    assert claims["postgresql", "machine"]["outcome"] == "loses"
    assert shown["postgresql"]["fsync"] == "on"
    assert claims["s3", "machine"]["reason"].startswith(
        f"the endpoint {initialised.s3_endpoint}")
    assert shown["multi_machine"] is False

    required = durability("--require", "multi-machine")
    assert required.returncode == REQUIREMENT_NOT_MET
    assert "does not survive the loss of one machine" in required.stdout
    assert required.stderr.splitlines() == [
        "tuneplane-admin durability: --require multi-machine not met:",
        f"  kafka does not survive the loss of one machine: {kafka['reason']}",
        "  postgresql does not survive the loss of one machine: "
        f"{claims['postgresql', 'machine']['reason']}",
        f"  s3 does not survive the loss of one machine: {claims['s3', 'machine']['reason']}"]
