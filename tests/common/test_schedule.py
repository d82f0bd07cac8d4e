"""A lifecycle pass repeated where no scheduler runs it: one pass without ``--every``; with
it, a failed pass is logged and the next one goes on, the heartbeat is written only after a
pass that succeeded, and the health check says unhealthy after two periods without one."""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tuneplane.common import schedule


def parsed(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    schedule.add_arguments(parser)
    return parser.parse_args(argv)


async def test_without_every_one_pass_gives_its_exit_code() -> None:
    passes = []

    async def one() -> int:
        passes.append(1)
        return 3

    assert await schedule.repeat(parsed(), one) == 3
    assert passes == [1]


async def test_a_failed_pass_is_logged_and_the_next_goes_on_and_writes_the_heartbeat(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    heartbeat = tmp_path / "beat"
    outcomes: Iterator[Exception | int] = iter([RuntimeError("the store is away"), 1, 0])
    seen: list[bool] = []

    async def one() -> int:
        seen.append(heartbeat.exists())
        outcome = next(outcomes, 0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    with pytest.raises(TimeoutError):  # it runs for good
        await asyncio.wait_for(schedule.repeat(
            parsed("--every", "0.05", "--heartbeat", str(heartbeat)), one), timeout=0.5)
    assert seen[:4] == [False, False, False, True]  # written only once a pass succeeded
    assert "the pass failed; the next in 0.05 s" in caplog.text
    assert "the store is away" in caplog.text
    assert heartbeat.read_text() == "0.05\n"


def test_the_health_check_allows_one_failed_pass_not_two(tmp_path: Path) -> None:
    heartbeat = tmp_path / "beat"
    assert schedule.main([str(heartbeat)]) == 1  # no pass has succeeded yet
    heartbeat.write_text("3600\n")
    written = heartbeat.stat().st_mtime
    assert schedule.main([str(heartbeat)]) == 0
    assert schedule.healthy(heartbeat, now=written + 2 * 3600 + schedule.SLACK)
    assert not schedule.healthy(heartbeat, now=written + 2 * 3600 + schedule.SLACK + 1)
    os.utime(heartbeat, (time.time() - 3 * 3600, time.time() - 3 * 3600))
    assert schedule.main([str(heartbeat)]) == 1


@pytest.mark.parametrize("every", ["0", "-5", "soon"])
def test_every_must_be_seconds_above_zero(every: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parsed("--every", every)
    assert "--every" in capsys.readouterr().err


async def test_after_a_failed_pass_the_next_comes_sooner_than_the_period(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(schedule, "RETRY_AFTER", 0.05)
    heartbeat = tmp_path / "beat"
    passes: list[int] = []

    async def one() -> int:
        passes.append(1)
        return 1 if len(passes) == 1 else 0  # the first fails

    with pytest.raises(TimeoutError):
        await asyncio.wait_for(schedule.repeat(
            parsed("--every", "3600", "--heartbeat", str(heartbeat)), one), timeout=0.5)
    assert len(passes) == 2  # retried within a moment, then an hour's wait
    assert heartbeat.read_text() == "3600\n"


async def test_a_fatal_failure_ends_the_schedule() -> None:
    async def one() -> int:
        raise KeyError("a setting is wrong")

    with pytest.raises(KeyError):
        await asyncio.wait_for(schedule.repeat(parsed("--every", "0.05"), one,
                                               fatal=(KeyError,)), timeout=2)
