"""The collector's figures for node_exporter's textfile collector (``run
--metrics-textfile-dir``, or TUNEPLANE_COLLECTOR_METRICS_TEXTFILE_DIR): the real binary writes
one ``tuneplane-collector-<hash>.prom`` that prometheus_client's parser reads, its figures
those ``spool status`` shows; a collector that ends with batches left keeps its file (its
timestamp no longer moves), one that delivered everything removes it; a directory it
cannot write is said once, and collection goes on."""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.collector.binary.scripted_ingest import collecting, scripted_ingest
from tests.support.collector_binary import (
    HOST_TARGET,
    TARGETS,
    spool_status,
    unreachable_run,
)
from tests.support.truth import write_jsonl

#: Every figure a collector writes once its spool was looked at (the last ACK's time only
#: once there was one).
FIGURES = {
    "tuneplane_collector_spool_bytes": "gauge",
    "tuneplane_collector_spool_limit_bytes": "gauge",
    "tuneplane_collector_spool_batches": "gauge",
    "tuneplane_collector_spool_points": "gauge",
    "tuneplane_collector_quarantined_batches": "gauge",
    "tuneplane_collector_spool_filesystem_free_bytes": "gauge",
    "tuneplane_collector_batches_sealed_total": "counter",
    "tuneplane_collector_points_sealed_total": "counter",
    "tuneplane_collector_records_refused_total": "counter",
    "tuneplane_collector_batches_sent_total": "counter",
    "tuneplane_collector_points_sent_total": "counter",
    "tuneplane_collector_textfile_timestamp_seconds": "gauge",
}
LAST_ACK = "tuneplane_collector_last_ack_timestamp_seconds"
CAP = 50_000_000


def figures(directory: Path, member: dict[str, str], *, alone: bool = True,
            ) -> dict[str, float]:
    """The textfile in ``directory``, parsed: each sample's value by name (none before it is
    written). Each family has its help and type, each sample ``member``'s labels and nothing
    else. ``alone``: nothing else is in the directory (no temporary file left beside it; a
    running collector's may be there for a moment)."""
    written = list(directory.iterdir() if alone else directory.glob("*.prom"))
    if not written:
        return {}
    (path,) = written
    assert path.name.startswith("tuneplane-collector-"), path
    assert path.suffix == ".prom", path
    found: dict[str, float] = {}
    for family in text_string_to_metric_families(path.read_text()):
        assert family.documentation, family.name
        for sample in family.samples:
            assert sample.labels == member, sample
            kind = FIGURES.get(sample.name, "gauge")
            assert family.type == kind, (sample.name, family.type)
            found[sample.name] = sample.value
    return found


def member(run: str, attempt: int) -> dict[str, str]:
    return {"run": run, "attempt": str(attempt), "member": "rank-0"}


@pytest.mark.parametrize("target", TARGETS)
def test_a_collector_left_with_batches_keeps_its_figures_which_are_its_spools(
        tmp_path: Path, tls_dir: Path, target: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TUNEPLANE_TELEMETRY_SPOOL_BYTES", str(CAP))
    source = tmp_path / "m.jsonl"
    write_jsonl(source, range(1_000), ["loss"])  # 4 batches of 250
    textfiles = tmp_path / "textfiles"
    textfiles.mkdir()
    started = time.time()
    done = unreachable_run(target, tmp_path, tls_dir, {"train": source},
                           "--metrics-textfile-dir", str(textfiles))
    assert done.returncode == 3, done.stderr  # ingest unreachable: the batches stay spooled
    shown: dict[str, Any] = spool_status(tmp_path / "spool")
    pending = shown["pending"]
    assert pending["batches"] == 4
    found = figures(textfiles, member("run-1", 2))
    assert set(found) == set(FIGURES), found
    assert found["tuneplane_collector_spool_batches"] == pending["batches"]
    assert found["tuneplane_collector_spool_points"] == pending["points"] == 1_000
    assert found["tuneplane_collector_spool_bytes"] == pending["bytes"]
    assert found["tuneplane_collector_quarantined_batches"] == len(shown["quarantined"]) == 0
    assert found["tuneplane_collector_spool_limit_bytes"] == CAP
    assert found["tuneplane_collector_spool_filesystem_free_bytes"] > 0
    assert found["tuneplane_collector_batches_sealed_total"] == 4
    assert found["tuneplane_collector_points_sealed_total"] == 1_000
    assert found["tuneplane_collector_batches_sent_total"] == 0
    assert started <= found["tuneplane_collector_textfile_timestamp_seconds"] <= time.time()


def test_a_collector_that_delivered_everything_removes_its_file(
        tmp_path: Path, tls_dir: Path) -> None:
    source = tmp_path / "m.jsonl"
    write_jsonl(source, range(300), ["loss"])  # 3 batches of 100
    textfiles = tmp_path / "textfiles"
    textfiles.mkdir()
    started = time.time()
    with scripted_ingest(tls_dir) as ingest, collecting(
            ingest, tls_dir, tmp_path, tmp_path / "spool", source, "--max-batch-points", "100",
            env={"TUNEPLANE_COLLECTOR_METRICS_TEXTFILE_DIR": str(textfiles)},
            until_idle=False) as collector:
        ingest.wait_for(lambda calls: len(calls) == 3)
        # Written at the start, then every 15 s: the next one counts what was sent.
        sent = "tuneplane_collector_batches_sent_total"
        collector.wait_until(lambda: figures(textfiles, member("r", 1), alone=False).get(
            sent) == 3, timeout=40)
        found = figures(textfiles, member("r", 1), alone=False)
        assert set(found) == set(FIGURES) | {LAST_ACK}, found
        assert found["tuneplane_collector_points_sent_total"] == 300
        assert found["tuneplane_collector_spool_batches"] == 0
        assert found["tuneplane_collector_spool_bytes"] == 0
        assert started <= found[LAST_ACK] <= found["tuneplane_collector_textfile_timestamp_seconds"]
        collector.process.send_signal(signal.SIGTERM)
        assert collector.ended(timeout=60) == 0, collector.said()
    assert list(textfiles.iterdir()) == []
    assert "metrics textfile" not in collector.said()


def test_a_directory_it_cannot_write_is_said_once_and_collection_goes_on(
        tmp_path: Path, tls_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    missing = tmp_path / "missing"
    monkeypatch.setenv("TUNEPLANE_COLLECTOR_METRICS_TEXTFILE_DIR", str(missing))
    source = tmp_path / "m.jsonl"
    write_jsonl(source, range(500), ["loss"])
    done = unreachable_run(HOST_TARGET, tmp_path, tls_dir, {"train": source})
    assert done.returncode == 3, done.stderr
    assert done.stderr.count("cannot write the metrics textfile") == 1, done.stderr
    shown: dict[str, Any] = spool_status(tmp_path / "spool")
    assert shown["pending"]["points"] == 500
    assert not missing.exists()
