"""Time until the Charts tab of a big run has every chart in view drawn, in headless
Chromium, against a running tuneplane-web: the run has 200 curves of 1,000,000 points each.

    uv run python bench/ui.py [--series 200] [--points 1000000] [--rounds 5] [--refill]

The run is filled once by the projector's own projection and writer (chunk and segment
summaries as in production, batches of 10,000 points of one tag) and kept for the next run
of this script (``--refill`` to make it anew, ``--drop`` to delete it after). Figures:
  first view   page opened → every chart in the viewport drawn (navigation start to the
               last card drawn, the page's own clock), p50 / max over --rounds loads
  next screen  one screen scrolled → every chart now in view drawn, p50 / p99
  all charts   scrolling screen by screen from the top until all are drawn
and the API answers the charts fetched, with the most points or buckets one returned.
Needs the real services (``eval "$(scripts/services up)"``) and Debian's chromium.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import asyncpg
import numpy as np
from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Page, async_playwright

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.browser import CHROMIUM, FLAGS, PASSWORD, sign_in
from tests.support.environment import BIN, Endpoints, free_port, run_admin
from tests.support.processes import Process
from tuneplane.controlplane import passwords, projects, users
from tuneplane.projector.projection import RecordMeta, project
from tuneplane.projector.writer import PostgresWriter
from tuneplane.telemetry.v1 import telemetry_pb2 as pb

BATCH = 10_000
#: Resolves once every card in the viewport is drawn: the page's clock then, and how many.
IN_VIEW_DRAWN = """async () => {
  const inView = () => [...document.querySelectorAll('#grid .card:not([hidden])')]
    .filter((c) => {
      const r = c.getBoundingClientRect();
      return r.bottom > 0 && r.top < innerHeight;
    });
  for (;;) {
    const cards = inView();
    const drawn = cards.every((c) => c.dataset.state === 'drawn');
    if (document.body.dataset.ready && cards.length && drawn)
      return { at: performance.now(), cards: cards.length };
    await new Promise((r) => setTimeout(r, 4));
  }
}"""


def tag(i: int) -> str:
    return f"group{i // 10:02d}/metric{i % 10}"


async def fill(database_url: str, run_id: str, series: int, points: int) -> None:
    pool = await asyncpg.create_pool(database_url, min_size=1, max_size=2)
    writer = PostgresWriter(pool)
    started = time.perf_counter()
    sequence = 0
    try:
        for i in range(series):
            group = []
            for first in range(0, points, BATCH):
                steps = np.arange(first, min(points, first + BATCH), dtype=np.int64)
                values = (np.exp(-steps / (points / 4)) * (1 + i % 7) + 0.2 * np.sin(steps * 0.7)
                          * np.cos(steps / 90) + 0.01 * i)
                sequence += 1
                group.append(pb.Batch(
                    identity=pb.BatchIdentity(run_id=run_id, attempt=1, member="rank-0",
                                              spool_epoch="e", sequence=sequence),
                    chunks=[pb.SeriesChunk(source="train", tag=tag(i), steps=steps.tolist(),
                                           wall_times=(1.7e9 + steps * 0.05).tolist(),
                                           values=values.tolist())]))
                if len(group) == 20:
                    await writer.write_group([project(b.SerializeToString(),
                                                      RecordMeta(0, 0, None)) for b in group])
                    group = []
            if group:
                await writer.write_group([project(b.SerializeToString(),
                                                  RecordMeta(0, 0, None)) for b in group])
            done = (i + 1) * points
            rate = done / (time.perf_counter() - started)
            print(f"\rfilling: {i + 1}/{series} series, {done:,} points, {rate:,.0f} points/s",
                  end="", flush=True)
        print()
    finally:
        await pool.close()


async def stored(database_url: str, run_id: str) -> int:
    db = await asyncpg.connect(database_url)
    try:
        return int(await db.fetchval("SELECT coalesce(sum(points), 0) FROM batch_ledger "
                                     "WHERE run_id = $1", run_id))
    finally:
        await db.close()


async def drop(database_url: str, run_id: str) -> None:
    db = await asyncpg.connect(database_url)
    try:
        async with db.transaction():
            await db.execute("DELETE FROM curve_chunks USING series WHERE curve_chunks.series_id"
                             " = series.series_id AND series.run_id = $1", run_id)
            for table in ("series", "batch_ledger", "member_summaries"):
                await db.execute(f"DELETE FROM {table} WHERE run_id = $1", run_id)
    finally:
        await db.close()


def p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


async def measure(page: Page, url: str, rounds: int, answers: list[dict[str, Any]],
                  total: int) -> None:
    firsts = []
    for _ in range(rounds):
        await page.goto(url)
        drawn = await page.evaluate(IN_VIEW_DRAWN)
        firsts.append(drawn["at"])
    print(f"first view    p50 {statistics.median(firsts):7.0f} ms   max {max(firsts):7.0f} ms   "
          f"({drawn['cards']} charts in a 1400x1000 viewport; {rounds} loads)")
    answers.clear()
    screens = []
    started = time.perf_counter()
    while await page.locator("#grid .card[data-state=drawn]").count() < total:
        t0 = await page.evaluate("() => { scrollBy(0, innerHeight); return performance.now(); }")
        drawn = await page.evaluate(IN_VIEW_DRAWN)
        screens.append(drawn["at"] - t0)
    whole = time.perf_counter() - started
    print(f"next screen   p50 {statistics.median(screens):7.0f} ms   p99 {p(screens, 0.99):7.0f} ms"
          f"   ({len(screens)} screens)")
    print(f"all charts    {whole:7.2f} s to draw all {total} scrolling a screen at a time")
    biggest = max(s["points_returned"] for a in answers for s in a["series"])
    in_range = max(s["points_in_range"] for a in answers for s in a["series"])
    print(f"answers       {len(answers)} fetched while scrolling; at most {biggest:,} points "
          f"or buckets returned per series, of {in_range:,} in range")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--series", type=int, default=200)
    parser.add_argument("--points", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--refill", action="store_true", help="make the run anew")
    parser.add_argument("--drop", action="store_true", help="delete the run afterwards")
    args = parser.parse_args()
    endpoints = Endpoints.from_environ(os.environ)
    run_admin(endpoints, "init")
    run_id = f"bench-ui-{args.series}x{args.points}"
    want = args.series * args.points
    if args.refill or await stored(endpoints.database_url, run_id) != want:
        await drop(endpoints.database_url, run_id)
        await fill(endpoints.database_url, run_id, args.series, args.points)
    print(f"run {run_id}: {args.series} series of {args.points:,} points")
    name = f"bench-{uuid.uuid4().hex[:8]}"
    db = await asyncpg.connect(endpoints.database_url)
    try:
        await users.add_user(db, name)
        await projects.grant(db, projects.DEFAULT, name, projects.Role.VIEWER)
        await passwords.set_password(db, name, PASSWORD)
    finally:
        await db.close()
    port = free_port()
    web = Process([str(BIN / "tuneplane-web"), "--host", "127.0.0.1", "--port", str(port)],
                  Path(tempfile.mkdtemp()) / "web.log", ready="Uvicorn running on", port=port)
    answers: list[dict[str, Any]] = []
    try:
        async with async_playwright() as pw:
            browser = await pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
            context = await browser.new_context(viewport={"width": 1400, "height": 1000},
                                                bypass_csp=True)  # to read the page's clock
            page = await context.new_page()

            async def kept(response: Any) -> None:
                if "/attempts/1/tag" in response.url and response.ok:
                    with contextlib.suppress(PlaywrightError):  # a load navigated away
                        answers.append(await response.json())
            page.on("response", kept)
            url = f"http://localhost:{port}/runs/{run_id}/charts?attempt=1"
            await page.goto(url)
            await sign_in(page, name, PASSWORD)
            await page.wait_for_url(url)
            await page.evaluate(IN_VIEW_DRAWN)  # warm: the web's pool, PostgreSQL's cache
            await measure(page, url, args.rounds, answers, args.series)
            await browser.close()
    finally:
        web.stop()
        if args.drop:
            await drop(endpoints.database_url, run_id)


if __name__ == "__main__":
    asyncio.run(main())
