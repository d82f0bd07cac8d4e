"""``tuneplane-collector read``, ``check`` and ``spool status`` as users call them."""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

import pytest
from tensorboardX import SummaryWriter

from tuneplane.collector.cli import main


def lines(out: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in out.splitlines()]


def test_read_prints_every_record_with_its_place(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    writer = SummaryWriter(logdir=str(tmp_path / "tb"))
    writer.add_scalar("loss", math.nan, 1)
    writer.add_scalar("loss", math.inf, 2)
    writer.add_scalar("loss", -math.inf, 3)
    writer.add_scalars("grp", {"a": 0.5}, 4)
    writer.add_text("note", "hello", 5)
    writer.close()
    assert main(["read", str(tmp_path / "tb")]) == 0
    records = lines(capsys.readouterr().out)
    scalars = [r for r in records if r["kind"] == "scalar"]
    assert [(r["tag"], r["step"], r["value"]) for r in scalars] == [
        ("loss", 1, "nan"), ("loss", 2, "inf"), ("loss", 3, "-inf"), ("grp", 4, 0.5)]
    assert all(set(r) >= {"kind", "file", "offset", "tag", "step", "wall_time"}
               for r in records if r["kind"] != "session_start")
    assert {r["file"] for r in scalars if r["tag"] == "grp"} == {
        p.relative_to(tmp_path / "tb").as_posix()
        for p in (tmp_path / "tb").rglob("*tfevents*") if "grp" in str(p.parent)}
    assert [r["kind"] for r in records if r["kind"] not in ("scalar",)] == ["text"]


def test_read_reports_damage_on_stderr_and_still_succeeds(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    writer = SummaryWriter(logdir=str(tmp_path))
    for step in range(3):
        writer.add_scalar("loss", float(step), step)
    writer.close()
    (path,) = tmp_path.glob("*tfevents*")
    data = bytearray(path.read_bytes())
    data[-5] ^= 0xFF  # the last record's data
    path.write_bytes(bytes(data))
    assert main(["read", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    assert [r["step"] for r in lines(captured.out)] == [0, 1]
    assert "bad record data CRC; record skipped" in captured.err


def test_read_fails_only_for_unusable_input(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["read", str(tmp_path / "missing")]) == 1
    assert "no such file or directory" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main(["read", str(tmp_path / "empty")]) == 1
    assert "no *tfevents* files" in capsys.readouterr().err


def test_check_lists_who_reads_what(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    artifact = tmp_path / "i.yaml"
    artifact.write_text("version: 1\nsources:\n"
                        "  - {id: a, kind: jsonl, path: /a.jsonl, owner: rank-0}\n")
    assert main(["check", str(artifact)]) == 0
    assert capsys.readouterr().out == "rank-0\tjsonl\ta\t/a.jsonl\n"
    artifact.write_text("version: 1\nsources: []\n")
    assert main(["check", str(artifact)]) == 1
    assert "artifact.sources must contain at least 1 items" in capsys.readouterr().err


def test_run_without_sources_or_with_unowned_artifact_says_so(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["run", "--run", "r", "--attempt", "1", "--member", "rank-9", "--spool",
            str(tmp_path / "s"), "--target", "localhost:1", "--ca-file", "ca.pem",
            "--token-file", "t"]
    assert main(base) == 2
    assert "give --integration, --source or --tensorboard" in capsys.readouterr().err
    artifact = tmp_path / "i.yaml"
    artifact.write_text("version: 1\nsources:\n"
                        "  - {id: a, kind: jsonl, path: /a.jsonl, owner: rank-0}\n")
    assert main([*base, "--integration", str(artifact)]) == 2
    assert "member 'rank-9' owns no source" in capsys.readouterr().err


def test_spool_status_of_a_missing_spool_is_an_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["spool", "status", str(tmp_path)]) == 1
    assert "no spool at" in capsys.readouterr().err


def test_spool_status_of_a_spool_being_created_is_not_called_damaged(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "spool.sqlite3").write_bytes(b"")  # created, no schema yet
    assert main(["spool", "status", str(tmp_path)]) == 1
    error = capsys.readouterr().err
    assert "has no tables yet" in error
    assert "damaged" not in error


def test_read_into_a_pipe_closed_early_ends_quietly(tmp_path: Path) -> None:
    from tests.support.environment import BIN
    from tests.support.truth import write_jsonl
    write_jsonl(tmp_path / "m.jsonl", range(50_000), ["loss"])
    done = subprocess.run(f"set -o pipefail; {BIN / 'tuneplane-collector'} read "
                          f"{tmp_path / 'm.jsonl'} | head -n 2", shell=True,
                          executable="/bin/bash", capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.splitlines()) == 2
    assert done.stderr == ""


@pytest.fixture
def no_collector_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("SPOOL_ROOT", "TARGET", "TRUST_BUNDLE", "SPOOL_BYTES", "DRAIN_SECONDS"):
        monkeypatch.delenv(f"TUNEPLANE_TELEMETRY_{name}", raising=False)
    monkeypatch.delenv("TUNEPLANE_COLLECTOR_FAILPOINTS", raising=False)


@pytest.mark.usefixtures("no_collector_settings")
def test_run_takes_what_flags_leave_out_from_its_settings(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    base = ["run", "--run", "r", "--attempt", "1", "--member", "rank-0", "--source",
            f"a={tmp_path / 'a.jsonl'}", "--token-file", "t"]
    assert main(base) == 2
    assert "give --spool or set TUNEPLANE_TELEMETRY_SPOOL_ROOT" in capsys.readouterr().err
    monkeypatch.setenv("TUNEPLANE_TELEMETRY_SPOOL_ROOT", str(tmp_path / "spool"))
    assert main(base) == 2
    assert "give --target or set TUNEPLANE_TELEMETRY_TARGET" in capsys.readouterr().err
    monkeypatch.setenv("TUNEPLANE_TELEMETRY_TARGET", "")  # blank: unset
    assert main([*base, "--ca-file", "ca.pem"]) == 2
    assert "give --target or set TUNEPLANE_TELEMETRY_TARGET" in capsys.readouterr().err
    monkeypatch.setenv("TUNEPLANE_TELEMETRY_TARGET", "localhost:1")
    assert main(base) == 2
    assert "give --ca-file or set TUNEPLANE_TELEMETRY_TRUST_BUNDLE" in capsys.readouterr().err


@pytest.mark.usefixtures("no_collector_settings")
@pytest.mark.parametrize(("name", "value", "words"), [
    ("TUNEPLANE_TELEMETRY_SPOOL_BYTES", "lots", "must be a whole number, got 'lots'"),
    ("TUNEPLANE_TELEMETRY_DRAIN_SECONDS", "0", "must be positive, got 0"),
    ("TUNEPLANE_COLLECTOR_FAILPOINTS", "sael=3", "has 'sael=3', which is not POINT=N"),
])
def test_run_refuses_a_malformed_setting_by_name(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        name: str, value: str, words: str) -> None:
    monkeypatch.setenv(name, value)
    assert main(["run", "--run", "r", "--attempt", "1", "--member", "rank-0", "--source",
                 f"a={tmp_path / 'a.jsonl'}", "--token-file", "t"]) == 2
    assert f"tuneplane-collector run: {name} {words}" in capsys.readouterr().err
    assert main(["check", str(tmp_path / "missing.yaml")]) == 1  # other commands read none
    assert name not in capsys.readouterr().err
