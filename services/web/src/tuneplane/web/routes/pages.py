"""The pages: the runs list (``/runs``, where ``/`` leads), a run's page and its Charts and
Media tabs (static pages that ask the API for their data with the browser's session), their
static files and uPlot's (mounted on the app: ``mount``), and the liveness check
``/healthz``.

A page is sent to a browser holding a signed session cookie, and to anyone else a redirect
to ``/login``; what a page shows comes from the API, which checks the session and the
caller's roles at every call. None of these is in the OpenAPI schema.
"""

import time
from pathlib import Path
from urllib.parse import quote

from fastapi import APIRouter, FastAPI, Request, Response
from fastapi.responses import FileResponse, JSONResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles

from tuneplane.common.tokens import TokenError
from tuneplane.web.auth import browser
from tuneplane.web.dependencies import Signer

STATIC = Path(__file__).resolve().parents[1] / "static"


def mount(app: FastAPI, uplot_dir: Path) -> None:
    """The static files, and uPlot's dist folder from ``uplot_dir`` when it is there."""
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    if uplot_dir.is_dir():
        app.mount("/ui/uplot", StaticFiles(directory=uplot_dir), name="uplot")


def signed_in(request: Request, signer: Signer) -> bool:
    try:
        return browser.session_of(request, signer, now=time.time()) is not None
    except TokenError:
        return False


def to_login(request: Request) -> Response:
    """To the sign-in page, which comes back to this page with its view (the query)."""
    here = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    return RedirectResponse(f"/login?next={quote(here)}", status_code=303)


def page(request: Request, signer: Signer, name: str) -> Response:
    """The static page ``name`` to a signed-in browser; anyone else to the sign-in page."""
    if not signed_in(request, signer):
        return to_login(request)
    return FileResponse(STATIC / name, media_type="text/html")


def router(uplot_dir: Path) -> APIRouter:
    """The pages, the Charts tab answering 503 while uPlot is not installed."""
    pages = APIRouter()

    @pages.get("/", include_in_schema=False)
    def home() -> Response:
        return RedirectResponse("/runs", status_code=303)

    @pages.get("/runs", include_in_schema=False)
    def runs(request: Request, signer: Signer) -> Response:
        """The runs list (the page asks the API for its rows; its view is in the URL)."""
        return page(request, signer, "runs.html")

    @pages.get("/runs/{run_id}", include_in_schema=False)
    def run(request: Request, signer: Signer, run_id: str) -> Response:
        """A run's page: attempts, members, launches (the page asks the API)."""
        return page(request, signer, "run.html")

    @pages.get("/runs/{run_id}/charts", include_in_schema=False)
    def charts(request: Request, signer: Signer, run_id: str) -> Response:
        """The Charts tab (the page asks the API for its data). Not async: it looks at the
        filesystem."""
        if not signed_in(request, signer):
            return to_login(request)
        if not uplot_dir.is_dir():
            return JSONResponse({"detail": f"the charting library is not installed at "
                                           f"{uplot_dir}: run `npm ci --prefix "
                                           "services/web/ui`"}, status_code=503)
        return FileResponse(STATIC / "charts.html", media_type="text/html")

    @pages.get("/runs/{run_id}/media", include_in_schema=False)
    def media(request: Request, signer: Signer, run_id: str) -> Response:
        """The Media tab: images, histograms, text and audio (the page asks the API)."""
        return page(request, signer, "media.html")

    @pages.get("/healthz", include_in_schema=False)
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    return pages
