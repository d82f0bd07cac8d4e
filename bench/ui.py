r"""Time until the Charts tab of a big run has every chart in view drawn, in headless
Chromium, against a running tuneplane-web: by default a run of 200 curves of 1,000,000
points each; or one of many series (issue 34's 100,000) with few points, in sections.

    uv run python bench/ui.py [--series 200] [--points 1000000] [--rounds 5] [--refill]
    uv run python bench/ui.py --series 100000 --points 10 --section-size 1000 \
        --filter 'metric\d*7$'

The run is filled once by the projector's own projection and writer (chunk and segment
summaries as in production, batches of at most 10,000 points: a window of one long series,
or the same steps of up to 1,000 short ones) and kept for the next run of this script
(``--refill`` to make it anew, ``--drop`` to delete it after). Tags are
group<i>/metric<j>, --section-size to a section. Figures:
  first view   page opened (with --filter in its URL) → every chart in the viewport drawn
               (navigation start to the last card drawn, the page's own clock), p50 / max
               over --rounds loads
and for an index the grid shows whole (at most 200 charts):
  next screen  one screen scrolled → every chart now in view drawn, p50 / p99
  all charts   scrolling screen by screen from the top until all are drawn
  answers      the API answers of the charts fetched, the most points or buckets one held
or, for a bigger index (sections, the first open, pages of charts as they come into view):
  open section the first section closed, another opened → its charts in view drawn
  new filter   another expression typed → the grid filtered anew, its charts in view drawn
  index        the index's answers as the page timed them: sections, a section's page.
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
import urllib.parse
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
from tuneplane.telemetry.v1.limits import MAX_BATCH_SERIES

BATCH = 10_000
#: The most charts the grid shows whole (chartsview.js's SMALL_INDEX).
SMALL_INDEX = 200
#: Resolves once every card in the viewport is drawn: the page's clock then, and how many.
IN_VIEW_DRAWN = """async () => {
  const inView = () => [...document.querySelectorAll('#grid .section[open] .card')]
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


def tag(i: int, section_size: int, series: int) -> str:
    """Series ``i``'s tag: sections of ``section_size`` by name prefix (group00/metric0)."""
    sections = -(-series // section_size)
    return (f"group{i // section_size:0{max(2, len(str(sections - 1)))}d}/"
            f"metric{i % section_size:0{len(str(section_size - 1))}d}")


def batch_of(run_id: str, sequence: int, first: int, last: int, window: range,
             args: argparse.Namespace) -> pb.Batch:
    """Series ``first`` to ``last`` (excluded), their points at ``window``'s steps."""
    steps = np.arange(window.start, window.stop, dtype=np.int64)
    chunks = []
    for i in range(first, last):
        values = (np.exp(-steps / (args.points / 4)) * (1 + i % 7) + 0.2 * np.sin(steps * 0.7)
                  * np.cos(steps / 90) + 0.01 * i)
        chunks.append(pb.SeriesChunk(source="train", tag=tag(i, args.section_size, args.series),
                                     steps=steps.tolist(),
                                     wall_times=(1.7e9 + steps * 0.05).tolist(),
                                     values=values.tolist()))
    return pb.Batch(identity=pb.BatchIdentity(run_id=run_id, attempt=1, member="rank-0",
                                              spool_epoch="e", sequence=sequence),
                    chunks=chunks)


async def fill(database_url: str, run_id: str, args: argparse.Namespace) -> None:
    """Batches of at most BATCH points: one series' window of a long curve, or the same
    steps of many short series (at most MAX_BATCH_SERIES); 20 batches a transaction."""
    pool = await asyncpg.create_pool(database_url, min_size=1, max_size=2)
    writer = PostgresWriter(pool)
    started = time.perf_counter()
    sequence = 0
    together = max(1, min(MAX_BATCH_SERIES // 2, BATCH // args.points))  # series a batch
    group: list[pb.Batch] = []

    async def write() -> None:
        await writer.write_group([project(b.SerializeToString(), RecordMeta(0, 0, None))
                                  for b in group])
        done = sum(len(b.chunks[0].steps) * len(b.chunks) for b in group)
        written.append(done)
        group.clear()
        rate = sum(written) / (time.perf_counter() - started)
        print(f"\rfilling: {sum(written):,} of {args.series * args.points:,} points, "
              f"{rate:,.0f} points/s", end="", flush=True)
    written: list[int] = []
    try:
        for first in range(0, args.series, together):
            last = min(args.series, first + together)
            for lo in range(0, args.points, BATCH):
                sequence += 1
                group.append(batch_of(run_id, sequence, first, last,
                                      range(lo, min(args.points, lo + BATCH)), args))
                if len(group) == 20:
                    await write()
        if group:
            await write()
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
            await db.execute("DELETE FROM series_stats USING series WHERE series_stats.series_id"
                             " = series.series_id AND series.run_id = $1", run_id)
            for table in ("series", "batch_ledger", "member_summaries"):
                await db.execute(f"DELETE FROM {table} WHERE run_id = $1", run_id)
    finally:
        await db.close()


def p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


async def measure(page: Page, url: str, rounds: int, answers: list[dict[str, Any]],
                  args: argparse.Namespace) -> None:
    firsts = []
    for _ in range(rounds):
        await page.goto(url)
        drawn = await page.evaluate(IN_VIEW_DRAWN)
        firsts.append(drawn["at"])
    shown = await page.locator("#shown").inner_text()
    print(f"first view    p50 {statistics.median(firsts):7.0f} ms   max {max(firsts):7.0f} ms   "
          f"({drawn['cards']} charts in a 1400x1000 viewport; {shown}"
          f"{f' kept by {args.filter!r}' if args.filter else ''}; {rounds} loads)")
    total = int(shown.split()[0])
    if total <= SMALL_INDEX:
        await scroll_through(page, answers, total)
    else:
        await open_and_filter(page, url, rounds, args)


async def scroll_through(page: Page, answers: list[dict[str, Any]], total: int) -> None:
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


#: Closes the first section, then opens the ``k``-th: the page's clock at the click.
OPEN_SECTION = """(k) => {
  const heads = document.querySelectorAll('#grid .section > summary');
  heads[0].click();
  const t0 = performance.now();
  heads[k].click();
  return t0;
}"""
#: The index's answers (sections, a section's page) as the page timed them, in ms.
INDEX_TIMES = """() => performance.getEntriesByType('resource')
  .filter((e) => /\\/charts(\\/sections)?\\?/.test(e.name))
  .map((e) => ({ sections: e.name.includes('/charts/sections?'), ms: e.duration }))"""


async def open_and_filter(page: Page, url: str, rounds: int, args: argparse.Namespace) -> None:
    opened, filtered, index = [], [], []
    for k in range(1, rounds + 1):
        await page.goto(url)
        await page.evaluate(IN_VIEW_DRAWN)
        t0 = await page.evaluate(OPEN_SECTION, k)
        opened.append((await page.evaluate(IN_VIEW_DRAWN))["at"] - t0)
        index += await page.evaluate(INDEX_TIMES)
        typed = f"^group{k:02d}/.*{args.filter or ''}"
        await page.evaluate("() => performance.clearResourceTimings()")
        t0 = await page.evaluate("() => performance.now()")
        await page.fill("#filter", typed)
        await page.wait_for_function("f => document.getElementById('grid').dataset.filter "
                                     "=== f", arg=typed)
        filtered.append((await page.evaluate(IN_VIEW_DRAWN))["at"] - t0)
        index += await page.evaluate(INDEX_TIMES)
    print(f"open section  p50 {statistics.median(opened):7.0f} ms   max {max(opened):7.0f} ms   "
          f"(the first closed, another opened: its charts in view drawn; {rounds} sections)")
    print(f"new filter    p50 {statistics.median(filtered):7.0f} ms   max {max(filtered):7.0f} ms"
          f"   (typed, e.g. {typed!r}: 250 ms waiting for typing to pause included)")
    for what, label in ((True, "sections"), (False, "a page")):
        times = [e["ms"] for e in index if e["sections"] == what]
        print(f"index         {label:<9} p50 {statistics.median(times):6.1f} ms   max "
              f"{max(times):6.1f} ms   ({len(times)} answers, as the page timed them)")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--series", type=int, default=200)
    parser.add_argument("--points", type=int, default=1_000_000)
    parser.add_argument("--section-size", type=int, default=10,
                        help="series per section (tags group<i>/metric<j>)")
    parser.add_argument("--filter", default="", help="the grid's regular expression (q=)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--refill", action="store_true", help="make the run anew")
    parser.add_argument("--drop", action="store_true", help="delete the run afterwards")
    args = parser.parse_args()
    endpoints = Endpoints.from_environ(os.environ)
    run_admin(endpoints, "init")
    run_id = f"bench-ui-{args.series}x{args.points}" + (
        f"-s{args.section_size}" if args.section_size != 10 else "")
    want = args.series * args.points
    if args.refill or await stored(endpoints.database_url, run_id) != want:
        await drop(endpoints.database_url, run_id)
        await fill(endpoints.database_url, run_id, args)
    sections = -(-args.series // args.section_size)
    print(f"run {run_id}: {args.series:,} series of {args.points:,} points, in {sections:,} "
          f"sections")
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
            query = urllib.parse.urlencode({"attempt": 1, **({"q": args.filter}
                                                             if args.filter else {})})
            url = f"http://localhost:{port}/runs/{run_id}/charts?{query}"
            await page.goto(url)
            await sign_in(page, name, PASSWORD)
            await page.wait_for_url(url)
            await page.evaluate(IN_VIEW_DRAWN)  # warm: the web's pool, PostgreSQL's cache
            await measure(page, url, args.rounds, answers, args)
            await browser.close()
    finally:
        web.stop()
        if args.drop:
            await drop(endpoints.database_url, run_id)


if __name__ == "__main__":
    asyncio.run(main())
