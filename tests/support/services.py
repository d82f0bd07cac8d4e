"""scripts/services run on a services folder of a test's own (``TUNEPLANE_SERVICES_DIR``):
its ports, data and processes, never those of the shared ``.services``."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.support.environment import ROOT

SCRIPT = ROOT / "scripts" / "services"


def services(data: Path, *args: str, cwd: Path = ROOT,
             timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """``scripts/services ARGS`` with its state in ``data``; it may fail (see returncode)."""
    return subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, check=False,
                          cwd=cwd, timeout=timeout,
                          env={**os.environ, "TUNEPLANE_SERVICES_DIR": str(data)})
