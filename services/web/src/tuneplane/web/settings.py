"""What ``tuneplane-web`` reads from its environment, parsed once at its start; a setting
with a flag is overridden by it (``tuneplane.contract.flags``).
"""

from __future__ import annotations

from pathlib import Path

from tuneplane.contract.parsers import port, positive, seconds_or_zero, whole_or_zero
from tuneplane.contract.settings import (
    Settings,
    SettingsError,
    section,
    setting,
)
from tuneplane.contract.variables import (
    DATABASE_URL,
    DEFAULT_DRAIN_SECONDS,
    S3_BUCKET,
    S3_ENDPOINT,
    TELEMETRY_DRAIN_SECONDS,
    WEB_JWT_SECRET,
)
from tuneplane.web.auth.oidc_settings import OidcSettings

TLS_CERT = "TUNEPLANE_WEB_TLS_CERT"
TLS_KEY = "TUNEPLANE_WEB_TLS_KEY"

#: uPlot's dist folder, installed by ``npm ci --prefix services/web/ui``.
UPLOT_DIR = Path(__file__).resolve().parents[3] / "ui" / "node_modules" / "uplot" / "dist"


def existing_file(raw: str) -> Path:
    """A path naming a file there now: a wrong mount stops the service at its start."""
    path = Path(raw)
    if not path.is_file():
        raise ValueError(f"names no file: {raw}")
    return path


class WebSettings(Settings):
    database_url: str = setting(DATABASE_URL)
    jwt_secret: str = setting(WEB_JWT_SECRET)
    s3_endpoint: str | None = setting(S3_ENDPOINT, default=None)
    s3_bucket: str | None = setting(S3_BUCKET, default=None)
    max_points_cap: int = 10_000
    max_series_cap: int = 100
    unpack_budget: int = 200_000
    forwarded_allow_ips: str = setting(
        "TUNEPLANE_WEB_FORWARDED_ALLOW_IPS", default="127.0.0.1", flag="--forwarded-allow-ips",
        help="addresses of the proxies whose X-Forwarded-Proto/-For are trusted "
             "(comma-separated, or *): behind a proxy that ends TLS, its address, so the "
             "scheme is https (sessions and the same-origin check depend on it)")
    concurrent_queries: int = setting(
        "TUNEPLANE_WEB_CONCURRENT_QUERIES", parse=positive, default=16,
        help="authenticated requests a web replica answers at once; more wait for a slot "
             "(TUNEPLANE_WEB_QUERY_WAIT_SECONDS), up to four times as many, beyond which "
             "they are answered 503 with Retry-After at once")
    query_wait_seconds: float = setting(
        "TUNEPLANE_WEB_QUERY_WAIT_SECONDS", parse=seconds_or_zero, default=2.0,
        help="how long an authenticated request waits for a query slot before it is "
             "answered 503 (0: never waits)")
    queries_per_caller: int = setting(
        "TUNEPLANE_WEB_QUERIES_PER_CALLER", parse=positive, default=48,
        help="requests one caller (a user, whichever of their tokens and sessions; a run's "
             "workloads) has running or waiting on a replica, beyond which it is answered 429 "
             "with Retry-After; of them, a quarter of TUNEPLANE_WEB_CONCURRENT_QUERIES run at "
             "once and the rest wait their turn among the caller's own")
    answer_cache_bytes: int = setting(
        "TUNEPLANE_WEB_ANSWER_CACHE_BYTES", parse=whole_or_zero, default=64 << 20,
        shown="67108864 (64 MiB)",
        help="series answers a web replica keeps, by their size (their arrays, the JSON "
             "kept with them and their entry), to give again "
             "while the series is unchanged (one small statement instead of its read); "
             "0: none kept")
    max_body_bytes: int = setting(
        "TUNEPLANE_WEB_MAX_BODY_BYTES", parse=positive, default=1 << 20,
        shown="1048576 (1 MiB)",
        help="request body a web replica reads at most (413 beyond it, before parsing); "
             "the reporting path `/report/v1` has its own bounds")
    drain_seconds: int = setting(TELEMETRY_DRAIN_SECONDS, default=DEFAULT_DRAIN_SECONDS)
    deletion_undo_seconds: int = setting(
        "TUNEPLANE_DELETION_UNDO_SECONDS", parse=int, default=86400,
        help="seconds a deleted run or attempt can be taken back before `tuneplane-projector "
             "purge` removes its data (0: at the next purge)")
    pool_size: int = 8
    uplot_dir: Path = setting(
        "TUNEPLANE_WEB_UPLOT_DIR", parse=Path, default=UPLOT_DIR,
        shown="services/web/ui/node_modules/uplot/dist",
        help="uPlot's `dist` directory, served to the Charts page")
    tls_cert: Path | None = setting(
        TLS_CERT, parse=existing_file, default=None,
        help=f"server certificate (PEM, its chain after it) to serve HTTPS with, with "
             f"`{TLS_KEY}`; unset: plain HTTP (TLS ended in front of the service)")
    tls_key: Path | None = setting(
        TLS_KEY, parse=existing_file, default=None,
        help=f"the private key (PEM) of `{TLS_CERT}`")
    metrics_port: int = setting(
        "TUNEPLANE_WEB_METRICS_PORT", parse=port, default=0, flag="--metrics-port",
        help="port web serves its Prometheus metrics on (`/metrics`, plain HTTP, on "
             "--host), apart from the API's port so that they are never public; 0: not "
             "served")
    oidc: OidcSettings = section(OidcSettings)

    def __post_init__(self) -> None:
        if (self.tls_cert is None) != (self.tls_key is None):
            raise SettingsError(f"{TLS_CERT} and {TLS_KEY} go together: set both or neither",
                                (TLS_CERT, TLS_KEY))
