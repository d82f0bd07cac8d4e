"""The Charts tab in headless Chromium (Debian's, driven by Playwright), on runs the real
pipeline projected: the grid of every chart in sections, lazy charts, the regex filter,
smoothing, log scale, the x axis, an overlay of two attempts, per-chart settings, zoom, the
view reproduced from its URL, and the inspector with its downloads; all under the page's
Content-Security-Policy with no violation; a big index's sections, opened and paged as
they come into view. Screenshots go to .artifacts/ for CI."""

from __future__ import annotations

import asyncio
import math
import re
import time

import asyncpg
from playwright.async_api import Page

from tests.support.browser import ARTIFACTS, PASSWORD, opened_page, sign_in
from tests.support.credentials import add_user
from tests.support.environment import Endpoints
from tests.support.kafka import produce
from tests.support.processes import Process
from tuneplane.controlplane import passwords
from tuneplane.controlplane.mapping import freeze
from tuneplane.projector.projection import RecordMeta, project
from tuneplane.projector.writer import PostgresWriter
from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1.integration import MetricMapping

#: Tags of every member; train/loss is mapped to the canonical curve "loss".
TAGS = ["train/loss", "train/acc", "eval/loss", "lr", "grad/norm",
        *(f"layers/w{i:02d}" for i in range(10))]
POINTS = 4000  # per tag and member, in 4 batches


def value(tag: str, step: int, attempt: int, rank: int) -> float:
    """Noisy, so smoothing shows; grad/norm crosses zero, so a log scale leaves some out."""
    noise = 0.3 * math.sin(step * 1.7 + rank) * math.cos(step * 0.31)
    if tag == "grad/norm":
        return math.sin(step / 300 + rank) + noise
    return ((attempt + 1.0) * math.exp(-step / (1500 + 500 * rank)) + 1.1 + noise
            + TAGS.index(tag) * 0.05)


def batches(run_id: str, attempt: int, member: str) -> list[pb.Batch]:
    per = POINTS // 4
    return [pb.Batch(
        identity=pb.BatchIdentity(run_id=run_id, attempt=attempt, member=member,
                                  spool_epoch="e", sequence=seq + 1),
        sealed_at=1.7e9 + seq,
        chunks=[pb.SeriesChunk(source="tb", tag=tag, steps=list(range(seq * per, (seq + 1) * per)),
                               wall_times=[1.7e9 + attempt * 1e5 + 2.0 * s
                                           for s in range(seq * per, (seq + 1) * per)],
                               values=[value(tag, s, attempt, int(member[-1]))
                                       for s in range(seq * per, (seq + 1) * per)])
                for tag in TAGS]) for seq in range(4)]


async def card_names(page: Page, selector: str = "#grid .card:not([hidden])") -> list[str]:
    return [str(await c.get_attribute("data-chart")) for c in await page.locator(selector).all()]


async def filtered(page: Page, text: str, *, shown: str | None = None) -> None:
    """Types ``text`` in the filter and waits for the grid the server filtered by it (by
    nothing when it cannot read it)."""
    await page.fill("#filter", text)
    await page.wait_for_function("f => document.getElementById('grid').dataset.filter === f",
                                 arg=shown if shown is not None else text)


async def legend(page: Page, chart: str) -> str:
    return await page.locator(f'#grid .card[data-chart="{chart}"] .legend').inner_text()


async def test_the_charts_grid_filters_smooths_scales_overlays_and_keeps_its_view_in_the_url(
        initialised: Endpoints, projector: Process, web: Process, db: asyncpg.Connection,
        run_id: str) -> None:
    user = await add_user(db, "viewer", roles={"default": "viewer"})
    await passwords.set_password(db, user, PASSWORD)
    sent = [b for attempt in (1, 2) for m in ("rank-0", "rank-1")
            for b in batches(run_id, attempt, m)]
    await produce(initialised.kafka_bootstrap, sent)
    deadline = time.monotonic() + 120
    while await db.fetchval("SELECT count(*) FROM batch_ledger WHERE run_id = $1",
                            run_id) < len(sent):
        assert time.monotonic() < deadline
        await asyncio.sleep(0.1)
    for attempt in (1, 2):
        await freeze(db, run_id, attempt, [MetricMapping(tag="train/loss", name="loss",
                                                         goal="minimize", source="tb")])
    base = f"http://localhost:{web.port}/runs/{run_id}/charts"
    async with opened_page(width=1400, height=1000) as opened:
        page, errors = opened.page, opened.errors
        asked: list[str] = []  # the series answers the page asks for: one array per field
        page.on("request", lambda r: asked.append(r.url) if "/tag?" in r.url else None)
        await page.goto(f"{base}?attempt=1")
        assert page.url.endswith(f"/login?next=/runs/{run_id}/charts%3Fattempt%3D1")
        await sign_in(page, user, PASSWORD)
        await page.wait_for_url(f"**/runs/{run_id}/charts?attempt=1")
        await page.wait_for_selector("body[data-ready=true]", timeout=30_000)

        # The grid: canonical curve and ungrouped tags first, then sections by prefix.
        sections = [await s.get_attribute("data-section")
                    for s in await page.locator(".section").all()]
        assert sections == ["eval", "grad", "layers", "train", ""]
        assert await card_names(page) == ["eval/loss", "grad/norm",
                                          *(f"layers/w{i:02d}" for i in range(10)),
                                          "train/acc", "loss", "lr"]
        assert await page.locator("#shown").inner_text() == "15 of 15 charts"
        # Lazy: the charts in view are drawn, those far below have fetched nothing yet.
        await page.locator('.card[data-chart="layers/w02"][data-state=drawn]').wait_for()
        assert await page.locator('.card[data-chart="lr"]').get_attribute(
            "data-state") == "waiting"
        loss = page.locator('#grid .card[data-chart="eval/loss"]')
        text = await loss.inner_text()
        assert "tag · semantics unknown" in text
        assert re.search(r"reduced: [\d,]+ of 8,000 points", text), text  # 2 members
        assert "rank-0" in await legend(page, "eval/loss")
        assert asked
        assert all("format=columns" in url for url in asked)
        await page.screenshot(path=str(ARTIFACTS / "charts-grid.png"))
        # Synced hover: the cursor over one chart shows the same step's values in another.
        resting = await legend(page, "grad/norm")
        box = await page.locator('#grid .card[data-chart="eval/loss"] .u-over').bounding_box()
        assert box is not None
        await page.mouse.move(box["x"] + box["width"] * 0.3, box["y"] + box["height"] / 2)
        await page.locator('#grid .card[data-chart="grad/norm"] .u-cursor-x').wait_for()
        assert await legend(page, "grad/norm") != resting
        await page.mouse.move(0, 0)

        await filtered(page, "^(train|eval)/|^loss$")  # the filter, a regex (the server's)
        assert await card_names(page) == ["eval/loss", "train/acc", "loss"]
        assert await page.locator("#shown").inner_text() == "3 of 15 charts"
        await page.locator('.card[data-chart="loss"][data-state=drawn]').wait_for()
        assert "canonical · minimize" in await page.locator('.card[data-chart="loss"]').inner_text()
        await filtered(page, "train/(", shown="")  # invalid: says so, filters nothing
        assert await page.get_attribute("#filter", "aria-invalid") == "true"
        assert await page.locator("#shown").inner_text() == "15 of 15 charts"
        await filtered(page, "loss")

        before = await legend(page, "eval/loss")  # smoothing changes what is drawn
        await page.fill("#smoothing", "0")
        await page.locator("#smoothing-value", has_text="0").wait_for()
        assert await legend(page, "eval/loss") != before
        await page.fill("#smoothing", "0.95")
        assert "smooth=0.95" in page.url

        await page.check("#log-y")  # a log scale says what it cannot show
        assert "log=1" in page.url
        await filtered(page, "grad")
        grad = page.locator('#grid .card[data-chart="grad/norm"]')
        await grad.locator(".badge.hidden").wait_for()
        assert re.search(r"[\d,]+ ≤ 0 not on log scale", await grad.inner_text())
        await page.screenshot(path=str(ARTIFACTS / "charts-log.png"))
        await page.uncheck("#log-y")
        await page.check("input[name=x][value=relative]")
        assert "x=relative" in page.url
        await filtered(page, "loss")

        await page.select_option("#overlay-attempt", f"{run_id}@2")  # overlay attempt 2
        assert f"cmp={run_id}%402" in page.url
        await page.locator('#grid .card[data-chart="eval/loss"] .legend',
                           has_text="#2 rank-1").wait_for()
        overlaid = await legend(page, "eval/loss")
        assert "#1 rank-0" in overlaid
        assert "#2 rank-0" in overlaid
        await page.locator('#grid .card[data-chart="loss"] .legend',
                           has_text="#2 rank-1").wait_for()
        await page.screenshot(path=str(ARTIFACTS / "charts-overlay.png"))

        card = page.locator('#grid .card[data-chart="eval/loss"]')  # its own settings
        await card.locator(".chart-smoothing").select_option("0")
        await card.locator(".chart-log").click()
        assert await card.locator(".chart-log").get_attribute("aria-pressed") == "true"
        assert "c.tag%3Aeval%2Floss=s%3D0%3Blog%3D1" in page.url
        await page.check("input[name=x][value=step]")
        box = await card.locator(".u-over").bounding_box()
        assert box is not None
        await page.mouse.move(box["x"] + box["width"] * 0.40, box["y"] + 40)
        await page.mouse.down()  # drag-select a window: finer data for it
        await page.mouse.move(box["x"] + box["width"] * 0.45, box["y"] + 40, steps=5)
        await page.mouse.up()
        await card.locator(".badge.exact").wait_for()
        assert re.search(r"c\.tag%3Aeval%2Floss=s%3D0%3Blog%3D1%3Bz%3D\d+\.\.\d+", page.url)

        view = page.url  # the link reproduces the view
        await page.goto(view)
        await page.wait_for_selector("body[data-ready=true]")
        assert await page.input_value("#filter") == "loss"
        assert await page.input_value("#smoothing") == "0.95"
        assert await page.locator(f'.chip[data-overlay="{run_id}@2"]').count() == 1
        await card.locator(".badge.exact").wait_for()  # zoomed, as it was
        assert await card.locator(".chart-smoothing").input_value() == "0"
        await page.locator(".chip button").click()  # overlay removed
        await page.locator('#grid .card[data-chart="loss"] .legend',
                           has_text="#2").wait_for(state="detached")

        await filtered(page, "")  # scrolled to: the last charts are drawn too
        await page.locator('.card[data-chart="lr"]').scroll_into_view_if_needed()
        await page.locator('.card[data-chart="lr"][data-state=drawn]').wait_for()

        inspector = page.locator("#inspector")  # the raw inspector and its downloads
        await page.select_option("#inspect-source", label="rank-1 / tb")
        await inspector.locator(".card[data-state=drawn]").wait_for()
        await page.select_option("#inspect-tag", label="lr")
        await page.locator("#inspector h3", has_text="rank-1 · tb · lr").wait_for()
        assert "inspect=rank-1%7Ctb%7C%7Clr" in page.url
        href = await page.get_attribute("#download-csv", "href")
        assert href is not None
        assert "format=csv" in href
        download = await page.request.get(f"http://localhost:{web.port}{href}")
        lines = (await download.text()).splitlines()
        assert lines[0] == "step,wall_time,value"
        assert len(lines) == POINTS + 1
        await page.screenshot(path=str(ARTIFACTS / "charts-inspector.png"), full_page=True)
    assert errors == []  # CSP violations included


async def test_values_and_steps_near_1e17_are_drawn_not_a_frozen_tab(
        initialised: Endpoints, projector: Process, web: Process, db: asyncpg.Connection,
        run_id: str) -> None:
    """Doubles near 1e17 are 16 apart: an axis ticking by adding 5 would never pass its
    end. A tenant's steps and values there leave the grid drawn (a frozen tab would time
    the wait out)."""
    user = await add_user(db, "viewer", roles={"default": "viewer"})
    await passwords.set_password(db, user, PASSWORD)
    steps = [10**17 + 16 * i for i in range(100)]
    await produce(initialised.kafka_bootstrap, [pb.Batch(
        identity=pb.BatchIdentity(run_id=run_id, attempt=1, member="rank-0", spool_epoch="e",
                                  sequence=1),
        chunks=[pb.SeriesChunk(source="tb", tag="huge", steps=steps,
                               wall_times=[1.7e9 + i for i in range(100)],
                               values=[1e17 + 16 * (i % 3) for i in range(100)]),
                pb.SeriesChunk(source="tb", tag="flat", steps=list(range(100)),
                               wall_times=[1.7e9 + i for i in range(100)],
                               values=[1e17] * 100)])])
    deadline = time.monotonic() + 120
    while not await db.fetchval("SELECT count(*) FROM batch_ledger WHERE run_id = $1", run_id):
        assert time.monotonic() < deadline
        await asyncio.sleep(0.1)
    async with opened_page() as opened:
        page, errors = opened.page, opened.errors
        await page.goto(f"http://localhost:{web.port}/runs/{run_id}/charts")
        await sign_in(page, user, PASSWORD)
        for chart in ("huge", "flat"):
            card = page.locator(f'#grid .card[data-chart="{chart}"]')
            await card.locator("canvas").first.wait_for(timeout=15_000)
            assert await card.get_attribute("data-state") == "drawn"
        box = await page.locator('#grid .card[data-chart="huge"] .u-over').bounding_box()
        assert box is not None  # a zoom to a few pixels: the narrowest range there is
        await page.mouse.move(box["x"] + box["width"] * 0.50, box["y"] + 40)
        await page.mouse.down()
        await page.mouse.move(box["x"] + box["width"] * 0.51, box["y"] + 40, steps=3)
        await page.mouse.up()
        await page.locator('#grid .card[data-chart="huge"][data-state=drawn] .badge.exact'
                           ).wait_for(timeout=15_000)
        assert "c.tag%3Ahuge=z%3D" in page.url
        assert "c.tag%3Aflat" not in page.url  # a drag zooms its own chart, not the synced
        assert "exact: 100 points" in await page.locator("#inspector").inner_text()
        await page.screenshot(path=str(ARTIFACTS / "charts-huge.png"))
    assert errors == []


async def test_a_big_index_opens_its_first_section_and_asks_for_the_rest_as_shown(
        initialised: Endpoints, web: Process, db: asyncpg.Connection, run_id: str) -> None:
    """More charts than a small index holds: the sections come with their counts, the first
    open and its charts a page at a time as they scroll into view, the others closed until
    opened; a filter the server applies that keeps a few opens every section again."""
    user = await add_user(db, "viewer", roles={"default": "viewer"})
    await passwords.set_password(db, user, PASSWORD)
    tags = [*(f"a/m{i:03d}" for i in range(130)), *(f"b/x{i:03d}" for i in range(80)),
            *(f"c/y{i:02d}" for i in range(10)), "lr"]
    batch = pb.Batch(identity=pb.BatchIdentity(run_id=run_id, attempt=1, member="rank-0",
                                               spool_epoch="e", sequence=1),
                     chunks=[pb.SeriesChunk(source="tb", tag=t, steps=[0, 1, 2],
                                            wall_times=[1.7e9, 1.7e9 + 1, 1.7e9 + 2],
                                            values=[1.0, 0.5 + i / 1000, 0.25])
                             for i, t in enumerate(tags)])
    async with asyncpg.create_pool(initialised.database_url, min_size=1, max_size=1) as pool:
        await PostgresWriter(pool).write(project(batch.SerializeToString(),
                                                 RecordMeta(0, 0, None)))
    in_section = '.section[data-section="{}"] .card'
    async with opened_page(width=1400, height=1000) as opened:
        page, errors = opened.page, opened.errors
        await page.goto(f"http://localhost:{web.port}/runs/{run_id}/charts")
        await sign_in(page, user, PASSWORD)
        await page.wait_for_selector("body[data-ready=true]", timeout=30_000)
        sections = page.locator(".section")
        assert [await s.get_attribute("data-section") for s in await sections.all()] == [
            "a", "b", "c", ""]
        assert [await s.evaluate("s => s.open") for s in await sections.all()] == [
            True, False, False, False]
        assert await page.locator("#shown").inner_text() == f"{len(tags)} of {len(tags)} charts"
        assert await page.locator(".section .count").all_inner_texts() == [
            " 130", " 80", " 10", " 1"]
        assert await card_names(page, in_section.format("a")) == tags[:60]  # a page
        assert await page.locator(in_section.format("b")).count() == 0  # closed: not asked
        await page.locator('.card[data-chart="a/m000"][data-state=drawn]').wait_for()
        await page.screenshot(path=str(ARTIFACTS / "charts-sections.png"))

        await page.locator('.card[data-chart="a/m059"]').scroll_into_view_if_needed()
        await page.locator('.card[data-chart="a/m119"]').scroll_into_view_if_needed()
        await page.locator('.card[data-chart="a/m129"]').wait_for(state="attached")
        assert await card_names(page, in_section.format("a")) == tags[:130]

        await page.locator('.section[data-section="b"] > summary').click()  # opened
        await page.locator('.card[data-chart="b/x000"][data-state=drawn]').wait_for()
        assert await page.locator(in_section.format("b")).count() == 60

        await filtered(page, "^b/x00|^LR$")  # a few: every section with some, open
        assert await card_names(page) == [*(f"b/x{i:03d}" for i in range(10)), "lr"]
        assert await page.locator("#shown").inner_text() == f"11 of {len(tags)} charts"
        assert [await s.get_attribute("data-section") for s in await sections.all()] == [
            "b", ""]
        await page.locator('.card[data-chart="b/x000"][data-state=drawn]').wait_for()
        assert "q=%5Eb%2Fx00%7C%5ELR%24" in page.url
        await page.screenshot(path=str(ARTIFACTS / "charts-sections-filtered.png"))

        await page.locator('.section[data-section="b"] > summary').click()  # closed
        await filtered(page, "")  # many again: a opens first, b as the user left it
        assert [await s.evaluate("s => s.open") for s in await sections.all()] == [
            True, False, False, False]
        await page.locator('.section[data-section="a"] > summary').click()
        await page.screenshot(path=str(ARTIFACTS / "charts-sections-closed.png"))
    assert errors == []
