"""The OpenTelemetry Collector the exporter tests run (`scripts/otelcol build`)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def otelcol() -> Path:
    binary = os.environ.get("TUNEPLANE_OTELCOL", "")
    if not binary or not Path(binary).exists():
        pytest.fail("TUNEPLANE_OTELCOL is not set: build the collector with "
                    "`export TUNEPLANE_OTELCOL=$(scripts/otelcol build)`", pytrace=False)
    return Path(binary)
