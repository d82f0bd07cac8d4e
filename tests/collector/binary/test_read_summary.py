"""The static collector's ``read --summary``: what ``run`` would collect, without a spool.
On log directories of real writers, media and a hostile file, and on a JSONL file with bad
lines, each series' points and step range, each tag's rich records and the refused
records are exactly what ``run`` seals in its spool for the same files; a half-written last
record is said with its offset; both targets (aarch64 under qemu) print the same."""

from __future__ import annotations

import itertools
import json
import posixpath
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.collector.binary.collected import collect, spooled_series
from tests.collector.binary.test_read_tensorboard import hostile_events
from tests.support import writers
from tests.support.collector_binary import TARGETS, run, spool_status, spooled
from tests.support.media import write_media_logdir
from tests.support.truth import frame
from tuneplane.tensorboard.v1 import event_pb2 as tb

Entries = list[dict[str, Any]]


def summary(target: str, *paths: Path) -> tuple[Entries, str]:
    done = run(target, "read", "--summary", *map(str, paths))
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()], done.stderr.decode()


@pytest.fixture(scope="module")
def logdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("logs")
    writers.tensorboardx_with_restarts(root / "tbx")
    writers.torch_with_restarts(root / "torch")
    write_media_logdir(root / "media")
    (root / "hostile").mkdir()
    hostile_events(root / "hostile" / "events.out.tfevents.1.hostile")
    bell = root / "run\abell"  # a run path that is not a name: its scalars are refused
    bell.mkdir()
    (bell / "events.out.tfevents.1.bell").write_bytes(b"".join(frame(tb.Event(
        step=s, wall_time=1.7e9 + s, summary=tb.Summary(value=[tb.Summary.Value(
            tag="loss", simple_value=s / 2)])).SerializeToString()) for s in range(30)))
    return root


def collected(tmp_path: Path, tls_dir: Path, logdir: Path) -> Path:
    """The spool of ``run`` that read every event file below ``logdir`` as far as it can
    (the hostile file's half-written last record stays unread)."""
    ends = {}
    for path in logdir.rglob("*tfevents*"):
        end = path.stat().st_size
        if path.parent.name == "hostile":
            end -= 20  # its last record is cut after 20 bytes
        ends[("tb", str(path.relative_to(logdir)))] = end
    collect(tmp_path, tls_dir, ends, "--tensorboard", f"tb={logdir}")
    return tmp_path / "spool"


@pytest.mark.parametrize("target", list(TARGETS))
def test_a_summary_is_what_run_seals(target: str, logdir: Path, tmp_path: Path,
                                     tls_dir: Path) -> None:
    entries, said = summary(target, logdir)
    spool = collected(tmp_path, tls_dir, logdir)

    scalars = {(e["run_path"], e["tag"]): e for e in entries if e["kind"] == "scalars"}
    series = spooled_series(spool)
    assert scalars.keys() == series.keys()
    for key, points in series.items():
        steps = [step for step, _, _ in points]
        entry = scalars[key]
        assert (entry["records"], entry["first_step"], entry["last_step"]) == (
            len(points), steps[0], steps[-1]), key
        assert (entry["min_step"], entry["max_step"]) == (min(steps), max(steps)), key
        assert entry["steps_back"] == sum(b < a for a, b in itertools.pairwise(steps)), key
    assert any(e["steps_back"] > 0 for e in scalars.values())  # the restarts step back

    batches = spooled(spool)
    kinds = {1: "image", 2: "histogram", 3: "audio", 4: "text", 5: "tensor"}
    rich = Counter((kinds[r.kind], posixpath.dirname(r.file), r.tag)
                   for b in batches for r in b.rich)
    shown = Counter({(e["kind"], e["run_path"], e["tag"]): e["records"] for e in entries
                     if e["kind"] in kinds.values()})
    assert shown == rich
    assert sum(shown.values()) == sum(rich.values()) > 0

    total = entries[-1]
    assert (total["kind"], total["path"]) == ("total", str(logdir))
    assert total["points"] == sum(len(p) for p in series.values())
    assert total["series"] == len(series)
    refused = Counter[str]()
    rejected = spool_status(spool)["rejected"]
    assert isinstance(rejected, list)
    for row in rejected:
        refused[row["reason"]] += row["count"]
    assert refused == {"run path not a name": 30}
    assert total["refused"] == dict(refused)
    assert "hostile/events.out.tfevents.1.hostile@" in said
    assert "incomplete last record (20 bytes); not read" in said


@pytest.mark.parametrize("target", list(TARGETS))
def test_a_jsonl_summary_counts_the_good_lines_and_says_the_bad(target: str,
                                                                tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(
        json.dumps({"step": s, "wall_time": 1.7e9 + s,
                    "metrics": {"loss": 1 / (s + 1), **({"acc": 0.5} if s % 2 else {})}})
        + "\n" for s in range(1000)) + '{"step": 5, "wall_time": "x", "metrics": {"a": 1}}\n'
        '{"step": 1001, "wall')
    entries, said = summary(target, path)
    assert [(e["tag"], e["records"], e["first_step"], e["last_step"]) for e in entries[:-1]] == [
        ("loss", 1000, 0, 999), ("acc", 500, 1, 999)]
    assert entries[-1] == {"kind": "total", "path": str(path), "files": 1, "series": 2,
                           "points": 1500, "rich": 0, "markers": 0, "refused": {}}
    assert f"{path}:1001: 'wall_time' must be a number" in said
    assert f"{path}:1002: incomplete last line (20 bytes); not read" in said


def test_a_path_that_is_not_there_is_refused(tmp_path: Path) -> None:
    done = run(next(iter(TARGETS)), "read", "--summary", str(tmp_path / "missing"))
    assert done.returncode == 1
    assert b"missing: no such file or directory" in done.stderr
