"""``scripts/demo`` as a newcomer runs it: it brings the stack up, sends its sample run
(JSONL and TensorBoard event files: scalars, an ``add_scalars`` group, images, histograms)
through the real pipeline, and prints a one-time sign-in link. Following only what it
printed, a fresh browser reaches the run's Charts tab, where the charts are drawn, and its
Media tab; the link then works no more. It says how to stop, and Ctrl-C (SIGINT) stops
what it started. Screenshots in ``.artifacts/``: ``demo-link.png``, ``demo-charts.png`` and
``demo-media.png``.
"""

from __future__ import annotations

import asyncio
import json
import os
import queue
import re
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import asyncpg
import pytest

from tests.support.browser import ARTIFACTS, opened_page
from tests.support.environment import ROOT, free_port

LINK = re.compile(r"^\s+(http://127\.0\.0\.1:\d+/auth/link\?link=[\w-]+)$")
RUN = re.compile(r"^demo: run (demo-[\d-]+) is in\.")


@dataclass
class Demo:
    process: subprocess.Popen[str]
    printed: list[str]  # its standard output, line by line
    link: str
    run_id: str
    web_port: int


def read_until_link(process: subprocess.Popen[str], seconds: float) -> list[str]:
    """The demo's output up to and including its last instruction (the way to stop)."""
    assert process.stdout is not None
    lines: queue.Queue[str] = queue.Queue()

    def forward() -> None:  # readline in a thread: a pipe's buffer hides lines from select
        for line in process.stdout or ():
            lines.put(line)
    threading.Thread(target=forward, daemon=True).start()
    printed: list[str] = []
    deadline = time.monotonic() + seconds
    while not any("scripts/services down" in line for line in printed):
        assert time.monotonic() < deadline, f"no sign-in link in {seconds} s: {printed}"
        try:
            printed.append(lines.get(timeout=1.0).rstrip("\n"))
        except queue.Empty:
            assert process.poll() is None, f"the demo ended ({process.poll()}): {printed}"
    return printed


@pytest.fixture
def demo(tmp_path: Path) -> Iterator[Demo]:
    web_port = free_port()
    env = {**os.environ, "TUNEPLANE_DEMO_PORT": str(free_port()),
           "TUNEPLANE_DEMO_WEB_PORT": str(web_port)}
    with (tmp_path / "demo.err").open("w") as errors:
        process = subprocess.Popen([str(ROOT / "scripts" / "demo")], cwd=ROOT, env=env,
                                   stdout=subprocess.PIPE, stderr=errors, text=True,
                                   stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        try:
            printed = read_until_link(process, 200)
        except AssertionError:
            print((tmp_path / "demo.err").read_text()[-5000:])
            raise
        links = [m.group(1) for m in map(LINK.match, printed) if m]
        runs = [m.group(1) for m in map(RUN.match, printed) if m]
        assert len(links) == 1, printed
        assert len(runs) == 1, printed
        yield Demo(process, printed, links[0], runs[0], web_port)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGINT)  # as Ctrl-C in its terminal
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        if process.stdout is not None:
            process.stdout.close()


async def rich_records_projected(db: asyncpg.Connection, run_id: str) -> None:
    """Waits until every image and histogram the demo's job wrote is projected."""
    written = json.loads((ROOT / ".services" / "demo" / run_id / "written.json").read_text())
    expected = written["images"] + written["histograms"]
    deadline = time.monotonic() + 60
    while (stored := await db.fetchval("SELECT count(*) FROM rich_records WHERE run_id = $1",
                                       run_id)) < expected:
        assert time.monotonic() < deadline, f"{stored} of {expected} rich records projected"
        await asyncio.sleep(0.2)
    assert stored == expected


async def test_the_demo_ends_on_a_link_that_opens_its_run_charts(
        demo: Demo, db: asyncpg.Connection) -> None:
    text = "\n".join(demo.printed)
    assert "press Ctrl-C" in text
    assert "scripts/services down" in text
    assert "#token=" not in text  # no lasting credential in an address
    charts = f"/runs/{demo.run_id}/charts"
    async with opened_page(width=1400, height=1100) as opened:
        page, errors = opened.page, opened.errors
        await page.goto(demo.link)
        assert "signs this browser in as admin" in " ".join(
            (await page.locator("main").inner_text()).split())
        await page.screenshot(path=str(ARTIFACTS / "demo-link.png"))
        await page.click("button[type=submit]")  # "Continue", the only step
        await page.wait_for_url(f"**{charts}*")
        await page.wait_for_selector("body[data-ready=true]", timeout=30_000)
        names = [await c.get_attribute("data-chart")
                 for c in await page.locator("#grid .card").all()]
        # Canonical curves through the frozen mapping, then every unmapped tag.
        assert set(names) == {"loss", "accuracy", "train/lr", "eval/loss", "eval/accuracy",
                              "losses"}, names
        for chart in ("loss", "accuracy", "losses"):
            await page.locator(f'.card[data-chart="{chart}"][data-state=drawn]').wait_for()
        # The add_scalars group: one chart, a line per TensorBoard run it wrote.
        group = await page.locator('.card[data-chart="losses"] .legend').inner_text()
        assert "losses/train" in group, group
        assert "losses/eval" in group, group
        await page.screenshot(path=str(ARTIFACTS / "demo-charts.png"))

        await rich_records_projected(db, demo.run_id)
        await page.goto(f"http://127.0.0.1:{demo.web_port}/runs/{demo.run_id}/media")
        await page.wait_for_selector("body[data-ready=true]", timeout=30_000)
        await page.locator("#image article.card img").first.wait_for()
        assert await page.locator("#histogram canvas.ridges").get_attribute(
            "data-drawn") == "true"
        await page.screenshot(path=str(ARTIFACTS / "demo-media.png"))
        assert errors == []

    async with opened_page() as again:  # another browser, the same link: spent
        answer = await again.page.goto(demo.link)
        assert answer is not None
        assert answer.status == 410
        await again.page.locator(".error", has_text="used already").wait_for()
        assert await again.page.locator("button[type=submit]").count() == 0

    # Ctrl-C stops what the demo started: its web no longer answers.
    os.killpg(demo.process.pid, signal.SIGINT)
    assert demo.process.wait(timeout=60) == 130
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", demo.web_port), timeout=5).close()
