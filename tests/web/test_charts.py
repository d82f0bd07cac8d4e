"""The Charts tab in headless Chromium (Debian's, driven by Playwright), on a run the real
pipeline projected: curves drawn, reduced indicator, TensorBoard's restart purge shown,
zoom, inspector switching source, all under the page's Content-Security-Policy with no
violation."""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path

import asyncpg

from tests.support.browser import ARTIFACTS, PASSWORD, opened_page, sign_in
from tests.support.credentials import add_user
from tests.support.environment import Endpoints
from tests.support.kafka import produce
from tests.support.processes import Process
from tests.support.truth import member_batch
from tuneplane.controlplane import passwords
from tuneplane.controlplane.mapping import freeze
from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1.identity import MemberKey
from tuneplane.telemetry.v1.integration import MetricMapping


async def test_charts_tab_draws_curves_and_the_inspector_switches_source(
        initialised: Endpoints, projector: Process, web: Process, db: asyncpg.Connection,
        run_id: str) -> None:
    user = await add_user(db, "viewer", roles={"default": "viewer"})
    await passwords.set_password(db, user, PASSWORD)
    batches = [member_batch(MemberKey(run_id, 1, f"rank-{m}"), seq, 2000)
               for seq in range(1, 11) for m in range(2)]
    for b in batches:  # rank-0 restarts twice; TensorBoard ignores a run's first START,
        # and the second, at step 5000, drops the 1,000 earlier-read points of tag0 from it
        if b.identity.member == "rank-0" and b.identity.sequence in (1, 6):
            b.session_starts.add(source="train", file="events.out.tfevents.1",
                                 step=1000 if b.identity.sequence == 1 else 5000,
                                 wall_time=1.7e9)
    extra = pb.Batch()
    extra.CopyFrom(member_batch(MemberKey(run_id, 1, "rank-0"), 11, 10))
    for chunk in extra.chunks:
        chunk.source = "eval"
    await produce(initialised.kafka_bootstrap, [*batches, extra])
    deadline = time.monotonic() + 120
    while await db.fetchval("SELECT count(*) FROM batch_ledger WHERE run_id = $1",
                            run_id) < len(batches) + 1:
        assert time.monotonic() < deadline
        await asyncio.sleep(0.1)
    await freeze(db, run_id, 1, [MetricMapping(tag="tag0", name="loss", goal="minimize",
                                               source="train")])
    async with opened_page() as opened:
        page, errors = opened.page, opened.errors
        answer = await page.goto(f"http://localhost:{web.port}/runs/{run_id}/charts")
        assert answer is not None
        assert "script-src 'self'" in answer.headers["content-security-policy"]
        assert page.url.endswith(f"/login?next=/runs/{run_id}/charts")  # no session yet
        await page.screenshot(path=str(ARTIFACTS / "login.png"))
        await sign_in(page, user, PASSWORD)
        await page.wait_for_url(f"**/runs/{run_id}/charts")
        cookies = await page.context.cookies()
        assert [(c["name"], c["httpOnly"], c["secure"], c["sameSite"]) for c in cookies] == [
            ("__Host-tuneplane_session", True, True, "Lax")]
        assert "token" not in page.url
        await page.wait_for_selector("body[data-ready=true]", timeout=30_000)
        curve = page.locator('[data-curve="loss"]')
        assert await curve.locator("canvas").count() >= 1
        text = await curve.inner_text()
        assert re.search(r"reduced: [\d,]+ of 19,000 points \(min/max/last per bucket\)",
                         text), text  # 2 members x 10,000 points, 1,000 purged
        assert "1,000 purged on restart" in text
        assert "minimize" in text
        assert "Unmapped (unknown semantics)" in await page.locator("#unmapped").inner_text()
        inspector = page.locator("#inspector")
        first = await inspector.inner_text()
        assert "rank-0 · eval · tag0" in first
        assert "exact: 5 points" in first  # the first source, sorted: every point shown
        await page.select_option("#inspect-source", label="rank-1 / train")
        # Waits by locator: a string to evaluate would be refused by the policy (no eval).
        await page.locator("#inspector", has_text="rank-1 · train · tag0").wait_for()
        switched = await inspector.inner_text()
        assert re.search(r"reduced: [\d,]+ of 10,000 points", switched), switched
        assert await inspector.locator("canvas").count() >= 1
        box = await page.locator("#inspect-chart .u-over").bounding_box()
        assert box is not None
        await page.mouse.move(box["x"] + box["width"] * 0.40, box["y"] + 50)
        await page.mouse.down()  # drag-select a window: the page fetches finer data for it
        await page.mouse.move(box["x"] + box["width"] * 0.45, box["y"] + 50, steps=5)
        await page.mouse.up()
        await page.locator("#inspector", has_text=re.compile(r"exact: \d+ points")).wait_for()
        await page.screenshot(path=str(ARTIFACTS / "charts.png"), full_page=True)
    assert errors == []  # CSP violations included
    assert Path(ARTIFACTS / "charts.png").stat().st_size > 10_000
