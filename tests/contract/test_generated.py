"""The generated modules in contract/src are what scripts/gen-protos makes of the .proto files."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.support.environment import ROOT


def test_generated_modules_are_current(tmp_path: Path) -> None:
    done = subprocess.run([str(ROOT / "scripts" / "gen-protos"), str(tmp_path)],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    fresh = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*_pb2*"))
    assert fresh, "scripts/gen-protos generated nothing"
    committed = ROOT / "contract" / "src"
    stale = [str(p) for p in fresh
             if not (committed / p).exists() or (committed / p).read_bytes() != (
                 tmp_path / p).read_bytes()]
    extra = sorted(str(p.relative_to(committed)) for p in committed.rglob("*_pb2*")
                   if p.relative_to(committed) not in fresh and "__pycache__" not in p.parts)
    assert not stale, f"generated modules are stale: {stale}; run scripts/gen-protos and commit"
    assert not extra, f"generated modules without a .proto: {extra}; delete them"
