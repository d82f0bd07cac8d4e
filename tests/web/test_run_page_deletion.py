"""Deleting a run from its page in headless Chromium: the Delete button asks for the run's
id typed again (the dialog's Delete stays disabled until it is), then the page says until
when the deletion can be taken back, and Undo brings the run back; a viewer is told no."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

import asyncpg

from tests.support.browser import ARTIFACTS, PASSWORD, opened_page, sign_in
from tests.support.credentials import add_user
from tests.support.processes import Process
from tuneplane.controlplane import deletions, passwords, projects, runs

ARTIFACT = {"version": 1, "sources": [
    {"id": "train", "kind": "jsonl", "path": "m.jsonl", "owner": "rank-0"}]}


async def signed_in(page: Any, url: str, user: str) -> None:
    """``page`` at ``url`` as ``user``, loaded."""
    await page.goto(url)
    await sign_in(page, user, PASSWORD)
    await page.wait_for_selector("body[data-ready=true]")


async def test_an_owner_deletes_a_run_by_typing_its_id_and_undoes_it(
        web: Process, db: asyncpg.Connection) -> None:
    project = f"del-{uuid.uuid4().hex[:8]}"
    await projects.create(db, project)
    owner = await add_user(db, "owner", roles={project: "owner"})
    viewer = await add_user(db, "viewer", roles={project: "viewer"})
    for user in (owner, viewer):
        await passwords.set_password(db, user, PASSWORD)
    run_id = f"{project}-run"
    await runs.create_run(db, ARTIFACT, created_by="test", now=dt.datetime.now(dt.UTC),
                          run_id=run_id, project=project)
    await runs.start_attempt(db, run_id)
    page_url = f"http://localhost:{web.port}/runs/{run_id}"
    async with opened_page(height=700) as opened:
        page = opened.page
        await signed_in(page, page_url, viewer)
        await page.click("#delete-run")
        await page.fill("#delete-confirm", run_id)
        await page.click("#delete-go")
        await page.locator("#delete-error", has_text="403").wait_for()
        assert not await deletions.deleted(db, run_id)
    async with opened_page(height=700) as opened:
        page = opened.page
        await signed_in(page, page_url, owner)
        await page.click("#delete-run")
        await page.fill("#delete-confirm", run_id[:-1])
        assert await page.locator("#delete-go").is_disabled()
        await page.fill("#delete-confirm", run_id)
        await page.screenshot(path=str(ARTIFACTS / "run-delete-dialog.png"))
        await page.click("#delete-go")
        await page.locator("#deleted").wait_for()
        assert await page.locator("main").is_hidden()
        after = await page.locator("#deleted-after").inner_text()
        assert after.startswith(str(dt.datetime.now(dt.UTC).year))  # a time a day from now
        await page.screenshot(path=str(ARTIFACTS / "run-deleted.png"))
        assert await deletions.deleted(db, run_id)
        assert await db.fetchval("SELECT state FROM attempts WHERE run_id = $1",
                                 run_id) == "cancelled"
        async with page.expect_navigation():  # Undo reloads the page
            await page.click("#undo-delete")
        await page.wait_for_selector("body[data-ready=true]")
        assert await page.locator("#deleted").is_hidden()
        assert await page.locator("#run").inner_text() == run_id
        assert not await deletions.deleted(db, run_id)
