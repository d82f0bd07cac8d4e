"""The alert rules (deploy/prometheus/alerts.yaml) are valid, pass their promtool unit tests
(alerts.test.yaml: each alert fires where it should, with its labels and annotations as
they render, and stays silent where it should not), name only metrics the services declare,
and every alert has a test; the example Prometheus configuration that loads them is valid.
The collector's names are the ones its textfile module writes (collector/binary/src/textfile.rs,
whose figures tests/collector/binary/test_metrics_textfile.py reads from the real binary).
promtool comes with Debian's prometheus package (scripts/test installs it)."""

from __future__ import annotations

import re
import shutil
import subprocess
from typing import Any

import pytest
import yaml
from prometheus_client import REGISTRY
from prometheus_client.metrics_core import Metric

from tests.support.environment import ROOT
from tuneplane.control import metrics as control_metrics
from tuneplane.exporter import metrics as exporter_metrics
from tuneplane.ingest import metrics as ingest_metrics
from tuneplane.projector import metrics as projector_metrics
from tuneplane.web import metrics as web_metrics

#: The services' metrics modules: importing them declares their metrics.
MODULES = (control_metrics, exporter_metrics, ingest_metrics, projector_metrics, web_metrics)

RULES = ROOT / "deploy" / "prometheus"
#: Where the collector names what it writes for node_exporter's textfile collector.
COLLECTOR_TEXTFILE = ROOT / "collector" / "binary" / "src" / "textfile.rs"
METRIC = re.compile(r"\btuneplane_[a-z_]+\b")
#: Each kind's names as exposed (a counter with ``_total``, a histogram's series).
SUFFIXES = {"counter": ("_total",), "gauge": ("",), "histogram": ("_bucket", "_sum", "_count"),
            "summary": ("", "_sum", "_count"), "unknown": ("",)}


def promtool(*args: str) -> subprocess.CompletedProcess[str]:
    binary = shutil.which("promtool")
    if binary is None:
        pytest.fail("no promtool: scripts/test installs Debian's prometheus package "
                    "(apt-get install prometheus)", pytrace=False)
    return subprocess.run([binary, *args], capture_output=True, text=True, check=False,
                          cwd=RULES, timeout=120)


def rules() -> list[dict[str, Any]]:
    loaded = yaml.safe_load((RULES / "alerts.yaml").read_text())
    return [rule for group in loaded["groups"] for rule in group["rules"]]


def declared() -> set[str]:
    """Every series name the services' metrics modules expose, and the collector's."""
    families: list[Metric] = list(REGISTRY.collect())
    # textfile.rs's FIGURES: a line each, the name after tuneplane_collector_ and the help.
    figures = COLLECTOR_TEXTFILE.read_text().partition('FIGURES: &str = "')[2].partition('";')[0]
    collector = {f"tuneplane_collector_{name}"
                 for name in re.findall(r"^ *([a-z_]+) .*\\n\\$", figures, re.MULTILINE)}
    assert collector, COLLECTOR_TEXTFILE
    return collector | {family.name + suffix for family in families
                        for suffix in SUFFIXES.get(family.type, ("",))}


def test_the_rules_are_valid() -> None:
    done = promtool("check", "rules", "alerts.yaml")
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_rules_pass_their_unit_tests() -> None:
    done = promtool("test", "rules", "alerts.test.yaml")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout


def test_the_example_configuration_loads_the_rules() -> None:
    done = promtool("check", "config", "prometheus.yaml")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "alerts.yaml" in done.stdout


def test_the_rules_name_only_metrics_the_services_declare() -> None:
    named = {name for rule in rules() for name in METRIC.findall(rule["expr"])}
    assert named, "no tuneplane metric in the rules"
    assert named <= declared(), f"not declared by any service: {sorted(named - declared())}"


def test_every_alert_has_a_unit_test() -> None:
    tested = yaml.safe_load((RULES / "alerts.test.yaml").read_text())
    fired = {case["alertname"] for test in tested["tests"]
             for case in test["alert_rule_test"] if case["exp_alerts"]}
    assert fired == {rule["alert"] for rule in rules()}


def test_declared_names_follow_the_conventions() -> None:
    """Base units in names, ``_total`` on counters (prometheus-client adds it), a unit on
    every histogram."""
    families = [f for f in REGISTRY.collect() if f.name.startswith("tuneplane_")]
    assert families
    for family in families:
        if family.type == "histogram":
            assert family.name.endswith("_seconds"), family.name
        assert not re.search(r"_(ms|milliseconds|kb|mb|bytes_total)$", family.name), \
            family.name
        assert not family.name.endswith("_total"), f"{family.name}: the client adds _total"
