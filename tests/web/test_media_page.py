"""The Media tab in headless Chromium (Debian's, driven by Playwright), on a tensorboardX log
directory sent through the real pipeline: an image card's step slider changes the image
shown, histograms are drawn, a hostile text is shown as text and runs nothing, an audio
player has a playable source; under the page's Content-Security-Policy, without errors."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path

import asyncpg

from tests.support.browser import ARTIFACTS, PASSWORD, opened_page, sign_in
from tests.support.credentials import add_user
from tests.support.environment import Endpoints
from tests.support.kafka import produce
from tests.support.media import (
    AUDIO_STEPS,
    HISTOGRAM_STEPS,
    HOSTILE,
    IMAGE_STEPS,
    TEXT_STEPS,
    collect_media,
    write_media_logdir,
)
from tests.support.processes import Process
from tuneplane.controlplane import passwords
from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1.identity import MemberKey
from tuneplane.tensorboard.v1 import event_pb2 as tb


async def test_the_media_tab_shows_images_histograms_text_and_audio(
        initialised: Endpoints, ingest: Process, projector: Process, web: Process,
        tls_dir: Path, tmp_path: Path, db: asyncpg.Connection) -> None:
    run_id = f"media-page-{uuid.uuid4().hex[:8]}"
    write_media_logdir(tmp_path / "logs")
    await collect_media(initialised, ingest, tls_dir, tmp_path, db,
                        MemberKey(run_id, 1, "rank-0"), tmp_path / "logs")
    user = await add_user(db, "viewer", roles={"default": "viewer"})
    await passwords.set_password(db, user, PASSWORD)
    base = f"http://localhost:{web.port}"
    async with opened_page(height=1400) as opened:
        page, errors = opened.page, opened.errors
        await page.goto(f"{base}/runs/{run_id}/media")
        assert "/login?next=" in page.url  # signed in only
        await sign_in(page, user, PASSWORD)
        await page.wait_for_url(f"**/runs/{run_id}/media")
        await page.wait_for_selector("body[data-ready=true]")
        assert await page.locator("nav a", has_text="Charts").get_attribute("href") == (
            f"/runs/{run_id}/charts?attempt=1")
        assert await page.locator("#overview-link").get_attribute("href") == (
            f"/runs/{run_id}?attempt=1")

        # Images: one card per run path; the slider steps through the sampled records.
        cards = page.locator("#image article.card")
        assert [await c.get_attribute("data-run-path") for c in await cards.all()] == [
            "", "eval"]
        card = cards.first
        image, slider = card.locator("img"), card.locator("input[type=range]")
        assert await image.get_attribute("data-step") == str(IMAGE_STEPS[-1])  # the latest
        assert await card.locator(".step").inner_text() == f"step {IMAGE_STEPS[-1]}"
        await image.wait_for()
        latest_src, latest_look = await image.get_attribute("src"), await image.screenshot()
        await page.locator("#image").screenshot(path=str(ARTIFACTS / "media-images.png"))
        async with page.expect_response(lambda r: "/api/v1/media/" in r.url) as loading:
            await slider.focus()
            await page.keyboard.press("Home")  # to the first step, as a user would
        served = await loading.value
        assert served.status == 200
        assert served.headers["content-type"] == "image/png"
        assert await image.get_attribute("data-step") == str(IMAGE_STEPS[0])
        assert await card.locator(".step").inner_text() == f"step {IMAGE_STEPS[0]}"
        assert await image.get_attribute("src") != latest_src
        await page.keyboard.press("ArrowRight")
        assert await image.get_attribute("data-step") == str(IMAGE_STEPS[1])
        await page.keyboard.press("Home")
        await page.wait_for_load_state("networkidle")
        assert await image.screenshot() != latest_look  # another picture on screen
        await page.locator("#image").screenshot(path=str(ARTIFACTS / "media-images-step0.png"))

        # Histograms: the offset view drawn from every step.
        ridges = page.locator("#histogram canvas.ridges")
        assert await ridges.get_attribute("data-drawn") == "true"
        assert await ridges.get_attribute("data-steps") == str(len(HISTOGRAM_STEPS))
        await page.locator("#histogram").screenshot(path=str(ARTIFACTS /
                                                             "media-histograms.png"))

        # Text: newest first, as text; the script in it is not an element and never ran.
        shown = page.locator("#text pre.text")
        assert await shown.all_inner_texts() == [f"{HOSTILE} step {s}"
                                                 for s in reversed(TEXT_STEPS)]
        assert await page.locator("#text script, #text b").count() == 0
        assert await page.title() == "Media · Tuneplane"
        await page.locator("#text").screenshot(path=str(ARTIFACTS / "media-text.png"))

        # Audio: a player whose source is a WAV the service serves.
        player = page.locator("#audio audio")
        assert await player.count() == 1
        assert await player.get_attribute("controls") is not None
        assert await page.locator("#audio .step").inner_text() == f"step {AUDIO_STEPS[-1]}"
        await page.locator("#audio audio[data-duration]").wait_for(state="attached")
        assert await player.get_attribute("data-duration") == "0.25"  # Chromium decoded it
        clip = await page.request.get(f"{base}{await player.get_attribute('src')}")
        assert clip.status == 200
        assert clip.headers["content-type"] == "audio/wav"
        assert (await clip.body())[8:12] == b"WAVE"
        await page.locator("#audio").screenshot(path=str(ARTIFACTS / "media-audio.png"))
        await page.screenshot(path=str(ARTIFACTS / "media.png"), full_page=True)

        await page.fill("#filter", "^weights")  # the tag filter leaves the histograms
        assert await page.locator("#image .group").is_hidden()
        assert await page.locator("#histogram .group").is_visible()
    assert errors == []


async def test_a_histogram_of_huge_narrow_buckets_is_drawn_not_a_frozen_tab(
        initialised: Endpoints, projector: Process, web: Process,
        db: asyncpg.Connection) -> None:
    """A writer's buckets at 1e17, 16 apart (one float64 step there): the axis' tick step
    (about 5) is below the values' precision, so ``t += step`` never passed the range's
    end and the page pushed ticks forever, freezing the tab of everyone who opened the
    run's Media tab. The ticks are counted now; the ridge is drawn."""
    run_id = f"media-ticks-{uuid.uuid4().hex[:8]}"
    value = tb.Summary.Value(tag="narrow", tensor=tb.TensorProto(
        dtype=tb.DataType.DT_DOUBLE, tensor_shape=tb.TensorShapeProto(dim=[
            tb.TensorShapeProto.Dim(size=1), tb.TensorShapeProto.Dim(size=3)]),
        double_val=[1e17, 1e17 + 16, 5.0]))
    record = pb.RichRecord(source="tb", tag="narrow", step=1, wall_time=1.0,
                           kind=pb.RichRecord.KIND_HISTOGRAM, plugin_name="histograms",
                           payload=value.SerializeToString(), file="events.out.tfevents.1")
    batch = pb.Batch(identity=pb.BatchIdentity(run_id=run_id, attempt=1, member="rank-0",
                                               spool_epoch="e", sequence=1),
                     sealed_at=1.7e9, rich=[record])
    await produce(initialised.kafka_bootstrap, [batch])
    deadline = time.monotonic() + 60
    while not await db.fetchval("SELECT count(*) FROM rich_records WHERE run_id = $1", run_id):
        assert time.monotonic() < deadline, "the batch was not projected"
        await asyncio.sleep(0.1)
    user = await add_user(db, "viewer", roles={"default": "viewer"})
    await passwords.set_password(db, user, PASSWORD)
    base = f"http://localhost:{web.port}"
    async with opened_page() as opened:
        page = opened.page
        await page.goto(f"{base}/runs/{run_id}/media")
        await sign_in(page, user, PASSWORD)
        await page.wait_for_url(f"**/runs/{run_id}/media")
        await page.wait_for_selector("body[data-ready=true]", timeout=20_000)
        ridges = page.locator("#histogram canvas.ridges")
        assert await ridges.get_attribute("data-drawn", timeout=5_000) == "true"
    assert opened.errors == []
