"""One configuration channel: every tuning flag of a serving command is a setting (a
variable in docs/settings.md) with the flag as its override. What stays a flag alone says
where to listen, how loud to log, or which mode or file to use for this start."""

from __future__ import annotations

import argparse
from collections.abc import Callable

import pytest

from tuneplane.contract import flags
from tuneplane.contract.settings import Settings
from tuneplane.control.arguments import parser as control_parser
from tuneplane.control.settings import ControlSettings
from tuneplane.exporter.cli import parser as exporter_parser
from tuneplane.exporter.settings import ExporterSettings
from tuneplane.ingest.cli import parser as ingest_parser
from tuneplane.ingest.settings import IngestSettings
from tuneplane.web.cli import parser as web_parser
from tuneplane.web.settings import WebSettings

#: Flags that are not tuning: the address, the log level, the TLS files of this start, and
#: control's Slurm and Kubernetes modes with what names the cluster, its users, namespaces,
#: spool place and collector image.
NOT_TUNING = {"--help", "--host", "--port", "--loglevel", "--certificate", "--private-key",
              "--tls-dir", "--telemetry-server-name", "--slurm", "--slurm-control-address",
              "--slurm-control-server-name", "--slurm-run-as", "--kubernetes",
              "--kubernetes-control-address", "--kubernetes-control-server-name",
              "--kubernetes-namespace", "--kubernetes-spool", "--kubernetes-collector-image",
              "--kubernetes-pull-policy", "--kubernetes-workdir-limit"}


def serve_parser(make: Callable[[], argparse.ArgumentParser],
                 sub: str | None) -> argparse.ArgumentParser:
    p = make()
    if sub is None:
        return p
    subparsers = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction))
    found = subparsers.choices[sub]
    assert isinstance(found, argparse.ArgumentParser)
    return found


SERVING = {
    "ingest": (lambda: ingest_parser(), None, IngestSettings),
    "control serve": (lambda: control_parser("control"), "serve", ControlSettings),
    "exporter": (lambda: exporter_parser(), None, ExporterSettings),
    "web": (lambda: web_parser(), None, WebSettings),
}


@pytest.mark.parametrize("name", sorted(SERVING))
def test_every_tuning_flag_is_a_setting(name: str) -> None:
    make, sub, settings = SERVING[name]
    p = serve_parser(make, sub)
    options = {o for a in p._actions for o in a.option_strings if o.startswith("--")}
    of_settings = {flag for flag, _, _ in flags.flagged(settings)}
    assert options - NOT_TUNING == of_settings, (
        f"{name}: flags outside its settings: {sorted(options - NOT_TUNING - of_settings)}")


@pytest.mark.parametrize("name", sorted(SERVING))
def test_each_flag_overrides_its_variable(name: str) -> None:
    make, sub, settings = SERVING[name]
    p = serve_parser(make, sub)
    for flag, spec, _ in flags.flagged(settings):
        args = p.parse_args([flag, "7"])
        assert flags.given(args, settings) == {spec.variable.name: "7"}, flag


def test_the_flag_wins_over_the_variable_and_keeps_its_parser() -> None:
    env = {"TUNEPLANE_KAFKA_BOOTSTRAP": "k:9092", "TUNEPLANE_WEB_JWT_SECRET": "s",
           "TUNEPLANE_DATABASE_URL": "postgresql://x/y",
           "TUNEPLANE_INGEST_MAX_CONCURRENT_RPCS": "100"}
    got: Settings = flags.settings(IngestSettings, env, ingest_parser().parse_args([]))
    assert isinstance(got, IngestSettings)
    assert (got.max_concurrent_rpcs, got.kafka_timeout) == (100, 15.0)
    got = flags.settings(IngestSettings, env, ingest_parser().parse_args(
        ["--max-concurrent-rpcs", "9", "--kafka-timeout", "2.5"]))
    assert isinstance(got, IngestSettings)
    assert (got.max_concurrent_rpcs, got.kafka_timeout) == (9, 2.5)
