"""What ``run`` reads from its environment (TUNEPLANE_TELEMETRY_*): each setting stands in
for the flag left out, a flag given wins, a blank setting is unset, a malformed one is
refused by its name (every one at once) before anything is made, and the other commands
read none of them."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.collector.binary.scripted_ingest import scripted_ingest
from tests.support.collector_binary import HOST_TARGET, command
from tests.support.truth import write_jsonl

SETTINGS = {f"TUNEPLANE_TELEMETRY_{name}" for name in (
    "SPOOL_ROOT", "TARGET", "TRUST_BUNDLE", "SPOOL_BYTES", "DRAIN_SECONDS")} | {
    "TUNEPLANE_COLLECTOR_FAILPOINTS", "TUNEPLANE_COLLECTOR_READER_SECONDS",
    "TUNEPLANE_COLLECTOR_RETRY_SECONDS", "TUNEPLANE_COLLECTOR_METRICS_TEXTFILE_DIR"}


def environ(**settings: str) -> dict[str, str]:
    """This process's environment without any collector setting, then ``settings``
    (TUNEPLANE_TELEMETRY_<name>, or a full name)."""
    env = {k: v for k, v in os.environ.items() if k not in SETTINGS}
    return env | {(k if k.startswith("TUNEPLANE_") else f"TUNEPLANE_TELEMETRY_{k}"): v
                  for k, v in settings.items()}


def run_with(tmp_path: Path, env: dict[str, str], *flags: str,
             ) -> subprocess.CompletedProcess[str]:
    """``run`` of r/1/rank-0 reading ``tmp_path/m.jsonl``, until idle."""
    (tmp_path / "token").write_text("t\n")
    return subprocess.run(
        [*command(HOST_TARGET), "run", "--run", "r", "--attempt", "1", "--member", "rank-0",
         "--source", f"train={tmp_path / 'm.jsonl'}", "--token-file", str(tmp_path / "token"),
         "--exit-when-idle", *flags],
        capture_output=True, text=True, timeout=120, check=False, env=env)


def refused(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, done.stderr
    return done.stderr


def test_run_takes_what_flags_leave_out_from_its_settings(tmp_path: Path,
                                                          tls_dir: Path) -> None:
    truth = write_jsonl(tmp_path / "m.jsonl", range(10), ["loss"])
    root, ca = tmp_path / "spools", str(tls_dir / "ca.pem")
    assert "give --spool or set TUNEPLANE_TELEMETRY_SPOOL_ROOT" in refused(
        run_with(tmp_path, environ()))
    assert "give --target or set TUNEPLANE_TELEMETRY_TARGET" in refused(
        run_with(tmp_path, environ(SPOOL_ROOT=str(root))))
    assert "give --target or set TUNEPLANE_TELEMETRY_TARGET" in refused(
        run_with(tmp_path, environ(SPOOL_ROOT=str(root), TARGET=" "), "--ca-file", ca))
    assert "give --ca-file or set TUNEPLANE_TELEMETRY_TRUST_BUNDLE" in refused(
        run_with(tmp_path, environ(SPOOL_ROOT=str(root), TARGET="localhost:1")))
    assert not root.exists()  # refused before anything was made
    with scripted_ingest(tls_dir) as ingest:
        settled = run_with(tmp_path, environ(SPOOL_ROOT=str(root), TRUST_BUNDLE=ca,
                                             TARGET=f"localhost:{ingest.port}"))
        assert settled.returncode == 0, settled.stderr
        assert ingest.delivered() == truth
        assert (root / "r" / "1" / "rank-0" / "spool.sqlite3").is_file()
        # A flag given wins over its setting.
        spool = tmp_path / "flagged"
        flagged = run_with(tmp_path, environ(SPOOL_ROOT=str(root), TRUST_BUNDLE="/none.pem",
                                             TARGET="localhost:1"),
                           "--spool", str(spool), "--ca-file", ca,
                           "--target", f"localhost:{ingest.port}")
        assert flagged.returncode == 0, flagged.stderr
        assert len(ingest.calls) == 2
        assert (spool / "spool.sqlite3").is_file()


@pytest.mark.parametrize(("name", "value", "words"), [
    ("TUNEPLANE_TELEMETRY_SPOOL_BYTES", "lots", "must be a whole number, got 'lots'"),
    ("TUNEPLANE_TELEMETRY_SPOOL_BYTES", "-5", "must be positive, got -5"),
    ("TUNEPLANE_TELEMETRY_DRAIN_SECONDS", "0", "must be positive, got 0"),
    ("TUNEPLANE_COLLECTOR_FAILPOINTS", "sael=3", "has 'sael=3', which is not POINT=N"),
    ("TUNEPLANE_COLLECTOR_READER_SECONDS", "0", "must be positive, got 0"),
    ("TUNEPLANE_COLLECTOR_RETRY_SECONDS", "soon", "must be a whole number, got 'soon'"),
])
def test_run_refuses_a_malformed_setting_by_name(tmp_path: Path, tls_dir: Path, name: str,
                                                 value: str, words: str) -> None:
    write_jsonl(tmp_path / "m.jsonl", range(10), ["loss"])
    env = environ(**{name: value})
    said = refused(run_with(tmp_path, env, "--spool", str(tmp_path / "spool"), "--target",
                            "localhost:1", "--ca-file", str(tls_dir / "ca.pem")))
    assert f"tuneplane-collector run: {name} {words}" in said
    assert not (tmp_path / "spool").exists()
    for other, code in ((["check", str(tmp_path / "missing.yaml")], 1),
                        (["read", str(tmp_path / "m.jsonl")], 0),
                        (["spool", "status", str(tmp_path / "spool")], 1)):
        done = subprocess.run([*command(HOST_TARGET), *other], capture_output=True, text=True,
                              timeout=60, check=False, env=env)
        assert done.returncode == code, (other, done.stderr)
        assert name not in done.stderr, (other, done.stderr)  # other commands read none


def test_every_malformed_setting_is_named_at_once(tmp_path: Path, tls_dir: Path) -> None:
    write_jsonl(tmp_path / "m.jsonl", range(10), ["loss"])
    said = refused(run_with(tmp_path, environ(SPOOL_BYTES="lots", DRAIN_SECONDS="0"),
                            "--spool", str(tmp_path / "spool"), "--target", "localhost:1",
                            "--ca-file", str(tls_dir / "ca.pem")))
    assert "TUNEPLANE_TELEMETRY_SPOOL_BYTES must be a whole number" in said
    assert "TUNEPLANE_TELEMETRY_DRAIN_SECONDS must be positive" in said


def test_run_without_a_source_says_what_to_give(tmp_path: Path, tls_dir: Path) -> None:
    done = subprocess.run(
        [*command(HOST_TARGET), "run", "--run", "r", "--attempt", "1", "--member", "rank-0",
         "--spool", str(tmp_path / "spool"), "--target", "localhost:1", "--ca-file",
         str(tls_dir / "ca.pem"), "--token-file", "t"],
        capture_output=True, text=True, timeout=60, check=False, env=environ())
    assert "give --integration, --source or --tensorboard" in refused(done)
    assert not (tmp_path / "spool").exists()
