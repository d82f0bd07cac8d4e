"""The settings classes of projector, exporter and web, not yet wired into their CLIs, give
what those CLIs build from the environment today (drop this once they are wired)."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping

import pytest

from tuneplane.contract.settings import SettingsError
from tuneplane.exporter import cli as exporter_cli
from tuneplane.exporter import service
from tuneplane.exporter.settings import ExporterSettings
from tuneplane.projector import cli as projector_cli
from tuneplane.projector.settings import ProjectorSettings
from tuneplane.web import cli as web_cli
from tuneplane.web import tool
from tuneplane.web.settings import ToolSettings, WebSettings

BASE = {"TUNEPLANE_DATABASE_URL": "postgresql://db/x", "TUNEPLANE_KAFKA_BOOTSTRAP": "k:9092",
        "TUNEPLANE_WEB_JWT_SECRET": "a-secret-of-enough-length"}
EVERYTHING = {**BASE, "TUNEPLANE_S3_ENDPOINT": "http://s3", "TUNEPLANE_S3_BUCKET": "b",
              "TUNEPLANE_PROJECTOR_DB_POOL": "9", "TUNEPLANE_PROJECTOR_GROUP_BATCHES": "8",
              "TUNEPLANE_PROJECTOR_DEAD_LETTERS_PER_MINUTE": "7",
              "TUNEPLANE_PROJECTOR_GROUP": "g", "TUNEPLANE_PROJECTOR_OFFSET_RESET": "latest",
              "TUNEPLANE_WEB_CONCURRENT_QUERIES": "3", "TUNEPLANE_WEB_UPLOT_DIR": "/u",
              "TUNEPLANE_EXPORTER_CONFIG": "/c.yaml", "TUNEPLANE_OTELCOL": "/bin/otelcol",
              "TUNEPLANE_TELEMETRY_SECRETS_ROOT": "/s", "TUNEPLANE_URL": "http://w",
              "TUNEPLANE_TOKEN": "t"}
ENVIRONMENTS = pytest.mark.parametrize("env", [BASE, EVERYTHING], ids=["base", "everything"])


@pytest.fixture
def environ(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in os.environ:
        if name.startswith("TUNEPLANE_"):
            monkeypatch.delenv(name)
    return monkeypatch


def use(monkeypatch: pytest.MonkeyPatch, env: Mapping[str, str]) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)


@ENVIRONMENTS
def test_projector_settings_are_what_its_cli_builds(environ: pytest.MonkeyPatch,
                                                    env: dict[str, str]) -> None:
    use(environ, env)
    assert dataclasses.asdict(ProjectorSettings.from_environ(env)) == \
        dataclasses.asdict(projector_cli.settings())


@ENVIRONMENTS
def test_web_settings_are_what_its_cli_builds(environ: pytest.MonkeyPatch,
                                              env: dict[str, str]) -> None:
    use(environ, env)
    assert dataclasses.asdict(WebSettings.from_environ(env)) == \
        dataclasses.asdict(web_cli.settings())


@ENVIRONMENTS
def test_exporter_settings_are_what_its_cli_builds(environ: pytest.MonkeyPatch,
                                                   env: dict[str, str]) -> None:
    use(environ, env)
    args = exporter_cli.parser().parse_args([])
    today = service.ExporterSettings(
        database_url=env["TUNEPLANE_DATABASE_URL"], kafka_bootstrap=env[
            "TUNEPLANE_KAFKA_BOOTSTRAP"], config_path=args.config_path, otelcol=args.otelcol,
        otlp_endpoint=args.otlp_endpoint, secrets_root=args.secrets_root,
        poll_seconds=args.poll_seconds, group=args.group)
    assert dataclasses.asdict(ExporterSettings.from_environ(env)) == dataclasses.asdict(today)


@ENVIRONMENTS
def test_tool_settings_are_the_defaults_of_its_flags(environ: pytest.MonkeyPatch,
                                                     env: dict[str, str]) -> None:
    use(environ, env)
    args = tool.parser().parse_args(["destinations", "list"])
    made = ToolSettings.from_environ(env)
    assert (made.url, made.token.value) == (args.url, args.token)


def test_the_same_setting_is_missing_in_both(environ: pytest.MonkeyPatch) -> None:
    env = {k: v for k, v in BASE.items() if k != "TUNEPLANE_KAFKA_BOOTSTRAP"}
    use(environ, env)
    with pytest.raises(SettingsError, match="TUNEPLANE_KAFKA_BOOTSTRAP is not set"):
        projector_cli.settings()
    with pytest.raises(SettingsError, match="TUNEPLANE_KAFKA_BOOTSTRAP is not set"):
        ProjectorSettings.from_environ(env)


def test_the_classes_have_the_fields_of_those_they_replace() -> None:
    from tuneplane.projector import app as projector_app
    from tuneplane.web import app as web_app
    for new, old in ((ProjectorSettings, projector_app.ProjectorSettings),
                     (ExporterSettings, service.ExporterSettings),
                     (WebSettings, web_app.WebSettings)):
        assert [f.name for f in dataclasses.fields(new)] == \
            [f.name for f in dataclasses.fields(old)]
