"""A pytest plugin (the root conftest loads it): how long each test directory took, set-up
and teardown included, printed at the end of the session (``.ci/run`` shows it), so a slow
directory is seen without digging through ``--durations``."""

from __future__ import annotations

from collections import defaultdict

import pytest

SPENT: defaultdict[str, float] = defaultdict(float)


def directory(nodeid: str) -> str:
    """``tests/web/test_x.py::test_y`` → ``tests/web``; a test at the top → ``tests``."""
    path = nodeid.split("::", 1)[0]
    parts = path.split("/")
    return "/".join(parts[:2]) if len(parts) > 2 else parts[0]


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    SPENT[directory(report.nodeid)] += report.duration


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not SPENT:
        return
    ranked = sorted(SPENT.items(), key=lambda item: -item[1])
    terminalreporter.write_line("time per test directory: " + ", ".join(
        f"{name} {seconds:.1f} s" for name, seconds in ranked))
