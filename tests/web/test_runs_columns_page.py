"""The runs list's added columns and parallel coordinates in headless Chromium: columns
added from the form (keys offered from the project's runs), sorted and filtered through
the API, kept in the URL, and the runs drawn as parallel coordinates whose lines open a
run's charts. Screenshots: .artifacts/runs-columns.png and runs-parallel.png."""

from __future__ import annotations

import math
import uuid

import asyncpg
from playwright.async_api import Page

from tests.support.browser import ARTIFACTS, PASSWORD, opened_page, sign_in
from tests.support.credentials import add_user
from tests.support.environment import Endpoints
from tests.support.processes import Process
from tests.web.test_run_table import T0, add_run
from tests.web.test_runs_page import ids
from tuneplane.controlplane import passwords
from tuneplane.projector.projection import RecordMeta, project
from tuneplane.projector.writer import PostgresWriter
from tuneplane.telemetry.v1 import telemetry_pb2 as pb

OPTIMIZERS = ["adam", "sgd", "adamw"]


def sweep_run(run_id: str, i: int) -> tuple[pb.Batch, float]:
    """One run of a learning-rate sweep: its hparams and a loss curve; its last loss."""
    lr, optimizer, layers = 10 ** (-1 - i / 3), OPTIMIZERS[i % 3], 2 + i % 4
    steps = list(range(0, 500, 5))
    floor = 0.2 + abs(math.log10(lr) + 2.5) / 4 + (0.1 if optimizer == "sgd" else 0)
    loss = [floor + 2 * math.exp(-s * lr * 20) for s in steps]
    batch = pb.Batch(identity=pb.BatchIdentity(run_id=run_id, attempt=1, member="rank-0",
                                               spool_epoch="e", sequence=1), sealed_at=1.7e9,
                     chunks=[pb.SeriesChunk(source="tb", tag="train/loss", steps=steps,
                                            wall_times=[1.7e9 + s for s in steps],
                                            values=loss)])
    for key, value in (("lr", lr), ("num_layers", layers)):
        batch.config.add(source="tb", key=key, number=value, wall_time=1.7e9,
                         origin=pb.ConfigEntry.ORIGIN_HPARAMS)
    batch.config.add(source="tb", key="optimizer", text=optimizer, wall_time=1.7e9,
                     origin=pb.ConfigEntry.ORIGIN_HPARAMS)
    return batch, loss[-1]


async def test_columns_and_parallel_coordinates_in_the_browser(
        initialised: Endpoints, web: Process, db: asyncpg.Connection) -> None:
    tag = uuid.uuid4().hex[:6]
    name = f"sweep-{tag}"
    await db.execute("INSERT INTO projects (project) VALUES ($1)", name)
    runs = [f"lr-sweep-{tag}-{i:02d}" for i in range(12)]
    made = [sweep_run(run_id, i) for i, run_id in enumerate(runs)]
    for run_id in runs:
        await add_run(db, run_id, name, T0, ["finished"], {})
    async with asyncpg.create_pool(initialised.database_url, min_size=1, max_size=1) as pool:
        await PostgresWriter(pool).write_group(
            [project(b.SerializeToString(), RecordMeta(0, i, None))
             for i, (b, _) in enumerate(made)])
    best = [r for r, _ in sorted(zip(runs, (last for _, last in made), strict=True),
                                 key=lambda pair: pair[1])]
    user = await add_user(db, "viewer", roles={name: "viewer"})
    await passwords.set_password(db, user, PASSWORD)
    base = f"http://localhost:{web.port}"
    async with opened_page(width=1440, height=1000) as opened:
        page, errors = opened.page, opened.errors
        await page.goto(f"{base}/runs?project={name}")
        await sign_in(page, user, PASSWORD)
        await page.wait_for_selector("body[data-ready=true]")
        assert sorted(await page.locator("#col-keys option").evaluate_all(
            "options => options.map(o => o.value)")) == ["lr", "num_layers", "optimizer"]
        for kind, key, aggregate in (("config", "lr", None), ("config", "optimizer", None),
                                     ("config", "num_layers", None),
                                     ("metric", "train/loss", "last")):
            await page.select_option("#col-kind", kind)
            if aggregate:
                await page.select_option("#col-agg", aggregate)
            await page.fill("#col-key", key)
            await page.click("#add-column button[type=submit]")
            await page.locator("th.added", has_text=key).wait_for()
        await page.click("th.added button[data-sort=col3]")  # the loss: most first
        await page.click("th.added button[data-sort=col3]")  # then least first
        await page.locator("th[aria-sort=ascending]").wait_for()
        await page.locator(f'#runs tbody tr:first-child[data-run="{best[0]}"]').wait_for()
        assert await ids(page) == best
        await click_filter(page, 1, "adam")
        await page.locator("#range", has_text="of 4").wait_for()
        assert await ids(page) == [r for r in best if runs.index(r) % 3 == 0]
        await page.screenshot(path=str(ARTIFACTS / "runs-columns.png"), full_page=True)

        await click_filter(page, 1, "")
        await page.locator("#range", has_text="of 12").wait_for()
        await page.click("#parallel")
        await page.locator("#parallel-view svg").wait_for()
        assert await page.locator("#parallel-view path[data-run]").count() == 12
        assert await page.locator("#parallel-view .axis .name").all_text_contents() == [
            "lr (log)", "optimizer", "num_layers", "train/loss (last)"]
        assert "parallel=1" in page.url
        await page.screenshot(path=str(ARTIFACTS / "runs-parallel.png"), full_page=True)
        await page.reload()  # the URL holds the columns, sort and view
        await page.locator("#parallel-view svg").wait_for()
        assert await ids(page) == best
        await page.locator(f'#parallel-view path[data-run="{best[0]}"]').dispatch_event("click")
        await page.wait_for_url(f"**/runs/{best[0]}/charts")
    assert [e for e in errors if "charts" not in e and "uplot" not in e.lower()] == []


async def click_filter(page: Page, column: int, text: str) -> None:
    box = page.locator("#filter-row input").nth(column)
    await box.fill(text)
    await box.press("Enter")
