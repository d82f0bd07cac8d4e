"""Headless Chromium (Debian's, driven by Playwright) for the page tests: a page whose
script errors and console errors (a Content-Security-Policy violation is one) are kept to
be asserted on, and signing in through the login form."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import pytest
from playwright.async_api import Page, async_playwright

from tests.support.environment import ROOT

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
#: The password the page tests give the users they sign in as.
PASSWORD = "a long test password"
#: Where screenshots go (kept by CI as artifacts).
ARTIFACTS = ROOT / ".artifacts"


@dataclass
class Opened:
    page: Page
    errors: list[str] = field(default_factory=list)  # script and console errors, in order


@asynccontextmanager
async def opened_page(width: int = 1280, height: int = 1000) -> AsyncIterator[Opened]:
    """A fresh browser's page of ``width`` x ``height``; the browser closes after."""
    if shutil.which(CHROMIUM) is None:
        pytest.fail(f"{CHROMIUM} is missing: scripts/test installs Debian's chromium")
    ARTIFACTS.mkdir(exist_ok=True)
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            opened = Opened(await browser.new_page(viewport={"width": width,
                                                             "height": height}))
            opened.page.on("pageerror", lambda e: opened.errors.append(str(e)))
            opened.page.on("console", lambda m: opened.errors.append(m.text)
                           if m.type == "error" else None)
            yield opened
        finally:
            await browser.close()


async def sign_in(page: Page, user: str, password: str) -> None:
    """Fill in and send the login form the page shows."""
    await page.fill("input[name=username]", user)
    await page.fill("input[name=password]", password)
    await page.click("button[type=submit]")
