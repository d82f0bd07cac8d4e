"""scripts/lib/exports.py: settings as ``export`` lines a shell can eval."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from scripts.lib.exports import export_lines, publish


def test_plain_values_stay_as_they_are() -> None:
    assert export_lines({"URL": "postgresql://postgres@127.0.0.1:5432/tuneplane",
                         "KEY": "a-b_C9"}) == (
        "export URL=postgresql://postgres@127.0.0.1:5432/tuneplane\nexport KEY=a-b_C9\n")


def test_other_values_are_quoted_for_the_shell(tmp_path: Path) -> None:
    values = {"HASH": "$2a$10$x y'z", "EMPTY": ""}
    script = export_lines(values) + 'printf "%s|%s" "$HASH" "$EMPTY"'
    shown = subprocess.run(["sh", "-c", script], capture_output=True, text=True, check=True)
    assert shown.stdout == "$2a$10$x y'z|"


def test_publish_prints_and_writes_the_same_lines(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    publish({"A": "1"}, tmp_path / "env")
    assert capsys.readouterr().out == (tmp_path / "env").read_text() == "export A=1\n"
