"""A real Prometheus (Debian's /usr/bin/prometheus) as a local process: a scrape
configuration of the targets a test started, the project's alert rules loaded, and PromQL
over its HTTP API, polled with a deadline; and one scrape of a process's metrics read
directly."""

from __future__ import annotations

import json
import shutil
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from tests.support.environment import ROOT, free_port
from tests.support.processes import Process

ALERTS = ROOT / "deploy" / "prometheus" / "alerts.yaml"
READY = "Server is ready to receive web requests."


def scraped(port: int) -> dict[str, float]:
    """What a process serves on its metrics port now: each sample's value by its name and
    labels (``name{k=v,...}``, labels sorted; ``name`` alone without labels)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
        text = answer.read().decode()
    found: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = ",".join(f"{k}={v}" for k, v in sorted(sample.labels.items()))
            found[f"{sample.name}{{{labels}}}" if labels else sample.name] = sample.value
    return found


def binary() -> str:
    found = shutil.which("prometheus")
    if found is None:
        pytest.fail("no prometheus: scripts/test installs Debian's prometheus package "
                    "(apt-get install prometheus)", pytrace=False)
    return found


def start(work: Path, targets: Mapping[str, int], *, every: str = "1s") -> Process:
    """Prometheus scraping ``127.0.0.1:<port>/metrics`` of each job in ``targets`` every
    ``every``, evaluating the alert rules as often; its data in ``work``."""
    config = {
        "global": {"scrape_interval": every, "scrape_timeout": every,
                   "evaluation_interval": every},
        "rule_files": [str(ALERTS)],
        "scrape_configs": [{"job_name": job,
                            "static_configs": [{"targets": [f"127.0.0.1:{port}"]}]}
                           for job, port in targets.items()]}
    (work / "prometheus.yaml").write_text(yaml.safe_dump(config))
    port = free_port()
    return Process([binary(), f"--config.file={work / 'prometheus.yaml'}",
                    f"--storage.tsdb.path={work / 'data'}",
                    f"--web.listen-address=127.0.0.1:{port}"],
                   work / "prometheus.log", ready=READY, port=port)


class Prometheus:
    """Its HTTP API."""

    def __init__(self, process: Process) -> None:
        self.url = f"http://127.0.0.1:{process.port}/api/v1"

    def get(self, path: str, **params: str) -> Any:
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        with urllib.request.urlopen(f"{self.url}/{path}{query}", timeout=10) as answer:
            body = json.load(answer)
        assert body["status"] == "success", body
        return body["data"]

    def query(self, promql: str) -> dict[str, float]:
        """An instant vector, each sample's value by its labels (as sorted ``k=v`` text)."""
        data = self.get("query", query=promql)
        assert data["resultType"] == "vector", data
        return {",".join(f"{k}={v}" for k, v in sorted(s["metric"].items())):
                float(s["value"][1]) for s in data["result"]}

    def until(self, promql: str, holds: Callable[[dict[str, float]], bool],
              within: float = 90.0) -> dict[str, float]:
        """Polls ``promql`` until its answer ``holds``; fails with the last answer after
        ``within`` seconds."""
        deadline = time.monotonic() + within
        while True:
            found = self.query(promql)
            if holds(found):
                return found
            assert time.monotonic() < deadline, f"{promql} never held: last {found}"
            time.sleep(0.5)
