"""The runs list in headless Chromium (Debian's, driven by Playwright): signed in through
the login form, search, a filter, sorting and paging, the view reproduced from its URL on a
reload, and the link into a run's Charts tab, under the page's Content-Security-Policy."""

from __future__ import annotations

import datetime as dt
import re
import uuid

import asyncpg
from playwright.async_api import Page

from tests.support.browser import ARTIFACTS, PASSWORD, opened_page, sign_in
from tests.support.credentials import add_user
from tests.support.environment import Endpoints
from tests.support.processes import Process
from tests.web.test_run_table import T0, add_run
from tuneplane.controlplane import passwords

STATES = ["finished", "failed", "running", "cancelled"]


async def ids(page: Page) -> list[str]:
    """The runs shown, in order (read by locator: the policy refuses a string to evaluate)."""
    return [str(await row.get_attribute("data-run"))
            for row in await page.locator("#runs tbody tr").all()]


async def test_the_runs_list_searches_filters_sorts_pages_and_links(
        initialised: Endpoints, web: Process, db: asyncpg.Connection) -> None:
    tag = uuid.uuid4().hex[:6]
    project = f"page-{tag}"
    await db.execute("INSERT INTO projects (project) VALUES ($1)", project)
    runs = [f"sweep-{tag}-{i:02d}" for i in range(30)]
    for i, run_id in enumerate(runs):
        await add_run(db, run_id, project, T0 + dt.timedelta(minutes=i),
                      [STATES[i % 4]] if i % 5 else [],
                      {(1, f"rank-{m}"): 100 * i + m for m in range(1 + i % 3)} if i % 5 else {})
    user = await add_user(db, "viewer", roles={project: "viewer"})
    await passwords.set_password(db, user, PASSWORD)
    base = f"http://localhost:{web.port}"
    async with opened_page(height=900) as opened:
        page, errors = opened.page, opened.errors
        await page.goto(f"{base}/")
        assert page.url.endswith("/login?next=/runs")  # / is the runs list, signed in
        await sign_in(page, user, PASSWORD)
        await page.wait_for_url("**/runs")
        await page.wait_for_selector("body[data-ready=true]")
        rows = page.locator("#runs tbody tr")
        assert await ids(page) == runs[::-1][:30]  # newest first; 30 fit in a page of 50
        assert await page.locator("#who").inner_text() == user
        assert await page.locator("#range").inner_text() == "1\N{EN DASH}30 of 30"

        await page.select_option("#size", "25")  # paging
        await page.locator("#range", has_text="1\N{EN DASH}25 of 30").wait_for()
        await page.click("#next")
        await page.locator("#range", has_text="26\N{EN DASH}30 of 30").wait_for()
        assert await ids(page) == runs[4::-1]
        assert "page=2" in page.url
        assert "size=25" in page.url

        await page.click("th button[data-sort=points]")  # sorting, back to the first page
        await page.locator("#range", has_text="1\N{EN DASH}25 of 30").wait_for()
        assert (await ids(page))[0] == runs[29]
        assert await page.locator("th[aria-sort=descending] button").inner_text() == "Points"
        await page.click("th button[data-sort=points]")
        await page.locator("th[aria-sort=ascending]").wait_for()  # set before the rows come
        await page.locator(f'#runs tbody tr:first-child[data-run="{runs[0]}"]').wait_for()
        assert (await ids(page))[0] == runs[0]  # no telemetry: 0 points

        await page.select_option("#state", "failed")  # a filter
        await page.locator("#range", has_text="of 6").wait_for()
        failed = [r for i, r in enumerate(runs) if i % 5 and STATES[i % 4] == "failed"]
        assert sorted(await ids(page)) == failed
        await page.fill("#q", f"{tag}-1")  # search: 10..19
        await page.locator("#range", has_text="of 2").wait_for()
        assert set(await ids(page)) == {runs[13], runs[17]}
        view = page.url
        assert re.search(r"q=[^&]*-1", view)
        assert "state=failed" in view
        assert "sort=points" in view
        await page.screenshot(path=str(ARTIFACTS / "runs-filtered.png"), full_page=True)

        await page.reload()  # the URL reproduces the view
        await page.wait_for_selector("body[data-ready=true]")
        assert await ids(page) == [runs[13], runs[17]]
        assert await page.input_value("#q") == f"{tag}-1"
        assert await page.input_value("#state") == "failed"
        await page.go_back()  # and the history steps back through views
        await page.locator("#range", has_text="of 6").wait_for()

        await page.click("#reset")
        await page.locator("#range", has_text="1\N{EN DASH}30 of 30").wait_for()
        await page.screenshot(path=str(ARTIFACTS / "runs.png"), full_page=True)
        live = rows.filter(has=page.locator(f'a:text-is("{runs[27]}")'))
        assert re.split(r"\s+", (await live.inner_text()).strip())[:6] == [
            runs[27], project, "#1", "cancelled", "1", "2,700"]
        await live.locator("a").click()  # into the run's Charts tab
        await page.wait_for_url(f"**/runs/{runs[27]}/charts")
    assert [e for e in errors if "charts" not in e and "uplot" not in e.lower()] == []
