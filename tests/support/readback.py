"""Curves read back over a web service's export route, as an admin's API client, and the
exact comparison with what the writers wrote (the compose and chart tests)."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path

from tests.support.processes import run_collector
from tests.support.truth import tensorboard_runs, write_add_scalars_logdir, write_jsonl
from tuneplane.telemetry.v1.identity import MemberKey

Points = list[tuple[int, float, float]]  # (step, wall time, value) in read order
Truth = dict[tuple[str, str], Points]
#: A collector's arguments for a member and its JSONL sources, with extra arguments.
Send = Callable[..., list[str]]
TAGS = ["loss", "accuracy"]


def jsonl_truth(path: Path, steps: range) -> dict[tuple[str, str], Points]:
    """A JSONL file of ``TAGS`` at ``steps`` written to ``path``; its points by (run path,
    tag)."""
    values = write_jsonl(path, steps, TAGS)
    return {("", tag): [(s, 1.7e9 + s, values[(tag, s)]) for s in steps] for tag in TAGS}


class Web:
    """The web service at ``base`` (``http://host:port``), with an admin's API token."""

    def __init__(self, base: str, token: str) -> None:
        self.base = f"{base}/api/v1"
        self.token = token

    def series(self, member: MemberKey, source: str, tag: str, run_path: str = "") -> Points:
        query = urllib.parse.urlencode({"member": member.member, "source": source, "tag": tag,
                                        "run_path": run_path, "format": "jsonl"})
        request = urllib.request.Request(
            f"{self.base}/runs/{member.run_id}/attempts/{member.attempt}/scalars/export?{query}",
            headers={"Authorization": f"Bearer {self.token}"})
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                lines = answer.read().decode().splitlines()
        except urllib.error.HTTPError as exc:
            if exc.code == 404:  # no point of the series projected yet
                return []
            raise
        return [(p["step"], p["wall_time"], p["value"]) for p in map(json.loads, lines)]

    def wait_exact(self, member: MemberKey, source: str, truth: dict[tuple[str, str], Points],
                   seconds: float = 180.0) -> None:
        """Every series of ``truth`` ((run path, tag) → points) reads back exactly: waits
        while points are still missing; a point stored twice, or one that differs, fails."""
        deadline = time.monotonic() + seconds
        for (run_path, tag), expected in truth.items():
            while True:
                got = self.series(member, source, tag, run_path)
                if len(got) >= len(expected) or time.monotonic() > deadline:
                    break
                time.sleep(0.5)
            assert sorted(got) == sorted(expected), \
                f"{member} {source} {run_path or '.'}/{tag}: {len(got)} points stored, " \
                f"{len(expected)} written"


def send_two_runs(send: Send, web: Web, prefix: str,
                  work: Path) -> list[tuple[MemberKey, str, Truth]]:
    """A TensorBoard run (200 steps of add_scalars) and a JSONL run (3,000 lines), each sent
    by a collector from ``send(member, sources, *extra)`` and read back exactly; the runs as
    (member, source, truth)."""
    tb, train = MemberKey(f"{prefix}-tb", 1, "rank-0"), MemberKey(f"{prefix}-jsonl", 1, "rank-0")
    write_add_scalars_logdir(work / "tb", steps=200)
    runs = [(tb, "tb", tensorboard_runs(work / "tb")),
            (train, "train", jsonl_truth(work / "train.jsonl", range(3000)))]
    for args in (send(tb, {}, "--tensorboard", f"tb={work / 'tb'}"),
                 send(train, {"train": work / "train.jsonl"})):
        done = run_collector(args)
        assert done.returncode == 0, done.stderr[-3000:]
        assert " 0 problems, 0 batches not delivered" in done.stderr, done.stderr[-3000:]
    for member, source, truth in runs:
        web.wait_exact(member, source, truth)
    return runs
