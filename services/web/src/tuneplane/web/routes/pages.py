"""The pages: the Charts tab of a run (a static page that asks the API, with the user's
token, for its data), its static files and uPlot's (mounted on the app: ``mount``), and
the liveness check ``/healthz``.

None of these needs a token, and none is in the OpenAPI schema.
"""

from pathlib import Path

from fastapi import APIRouter, FastAPI, Response
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles

STATIC = Path(__file__).resolve().parents[1] / "static"


def mount(app: FastAPI, uplot_dir: Path) -> None:
    """The static files, and uPlot's dist folder from ``uplot_dir`` when it is there."""
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    if uplot_dir.is_dir():
        app.mount("/ui/uplot", StaticFiles(directory=uplot_dir), name="uplot")


def router(uplot_dir: Path) -> APIRouter:
    """The pages, the Charts tab answering 503 while uPlot is not installed."""
    pages = APIRouter()

    @pages.get("/runs/{run_id}/charts", include_in_schema=False)
    def charts(run_id: str) -> Response:  # not async: it looks at the filesystem
        """The Charts tab (the page asks the API, with the user's token, for its data)."""
        if not uplot_dir.is_dir():
            return JSONResponse({"detail": f"the charting library is not installed at "
                                           f"{uplot_dir}: run `npm ci --prefix "
                                           "services/web/ui`"}, status_code=503)
        return FileResponse(STATIC / "charts.html", media_type="text/html")

    @pages.get("/healthz", include_in_schema=False)
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    return pages
