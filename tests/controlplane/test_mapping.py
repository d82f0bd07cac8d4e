"""The frozen metric mapping: canonical curves, aggregates from their owner, unmapped kept."""

from __future__ import annotations

import subprocess
from pathlib import Path

import asyncpg
import pytest

from tests.support.environment import BIN, Endpoints
from tests.support.kafka import produce
from tests.support.truth import member_batch
from tuneplane.controlplane.errors import MappingFrozen
from tuneplane.controlplane.mapping import SeriesRef, canonical, freeze, resolve
from tuneplane.telemetry.v1.identity import MemberKey
from tuneplane.telemetry.v1.integration import IntegrationError, MetricMapping, check_document

MAPPINGS = [
    MetricMapping(tag="train/loss", name="loss", goal="minimize", unit="nats"),
    MetricMapping(tag="eval/acc", name="accuracy", source="tb", goal="maximize",
                  aggregate_owner="rank-0"),
]


def test_resolution_keeps_members_apart_takes_aggregates_from_owner_and_guesses_nothing() -> None:
    series = [SeriesRef("rank-0", "train", "", "train/loss"),
              SeriesRef("rank-1", "train", "", "train/loss"),
              SeriesRef("rank-0", "tb", "", "eval/acc"),
              SeriesRef("rank-1", "tb", "", "eval/acc"),
              SeriesRef("rank-0", "other", "", "eval/acc"),
              SeriesRef("rank-0", "train", "", "loss")]
    result = resolve(MAPPINGS, series)
    loss, accuracy = result.curves
    assert (loss.name, loss.goal, loss.unit, loss.aggregate) == ("loss", "minimize", "nats",
                                                                  False)
    assert loss.series == (SeriesRef("rank-0", "train", "", "train/loss"),
                           SeriesRef("rank-1", "train", "", "train/loss"))
    assert accuracy.aggregate
    assert accuracy.series == (SeriesRef("rank-0", "tb", "", "eval/acc"),)
    assert result.not_owner == (SeriesRef("rank-1", "tb", "", "eval/acc"),)
    # a familiar name is not a mapping, and a source-bound mapping holds for that source only
    assert result.unmapped == (SeriesRef("rank-0", "other", "", "eval/acc"),
                               SeriesRef("rank-0", "train", "", "loss"))


def test_a_tag_mapped_twice_is_refused() -> None:
    document = {"version": 1, "sources": [{"id": "a", "kind": "jsonl", "path": "/a",
                                           "owner": "m"}],
                "mappings": [{"tag": "x", "name": "one"}, {"tag": "x", "name": "two"}]}
    with pytest.raises(IntegrationError, match=r"mappings\[1\] maps tag 'x' of any source a "
                                               "second time"):
        check_document(document, "i.yaml")


async def test_freezing_is_once_per_attempt_and_canonical_reads_through_it(
        initialised: Endpoints, db: asyncpg.Connection, run_id: str) -> None:
    assert await freeze(db, run_id, 1, MAPPINGS) is True
    assert await freeze(db, run_id, 1, MAPPINGS) is False  # the same again: fine
    with pytest.raises(MappingFrozen, match="has a different mapping frozen"):
        await freeze(db, run_id, 1, MAPPINGS[:1])
    await db.execute("INSERT INTO series (run_id, attempt, member, source, tag) VALUES "
                     "($1, 1, 'rank-0', 'train', 'train/loss'), "
                     "($1, 1, 'rank-0', 'train', 'lr')", run_id)
    result = await canonical(db, run_id, 1)
    assert [c.name for c in result.curves] == ["loss", "accuracy"]
    assert result.unmapped == (SeriesRef("rank-0", "train", "", "lr"),)
    unfrozen = await canonical(db, run_id, 2)  # no mapping frozen: nothing is guessed
    assert unfrozen.curves == ()
    one = await canonical(db, run_id, 1, tags=["train/loss"])  # a curve's tags alone
    assert one.curves == result.curves
    assert one.unmapped == ()


async def test_admin_freezes_from_the_artifact_and_prints_canonical_curves(
        initialised: Endpoints, projector: object, db: asyncpg.Connection, run_id: str,
        tmp_path: Path) -> None:
    artifact = tmp_path / "integration.yaml"
    artifact.write_text("version: 1\nsources:\n"
                        "  - {id: train, kind: jsonl, path: /a.jsonl, owner: rank-0}\n"
                        "mappings:\n  - {tag: tag0, name: loss, goal: minimize}\n")
    admin = str(BIN / "tuneplane-admin")
    done = subprocess.run([admin, "freeze-mapping", "--run", run_id, "--attempt", "1",
                           "--integration", str(artifact)], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr
    await produce(initialised.kafka_bootstrap, [member_batch(MemberKey(run_id, 1, "rank-0"),
                                                             1, 10)])
    shown = subprocess.run([admin, "curves", run_id, "--expect", "10"], capture_output=True,
                           text=True, check=False)
    assert shown.returncode == 0, shown.stderr
    done = subprocess.run([admin, "curves", run_id, "--attempt", "1", "--canonical"],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "loss (goal minimize; per member)", "    rank-0       train/tag0",
        "unmapped (unknown semantics): rank-0       train/tag1"]


def test_a_mapping_may_name_a_tensorboard_run_and_the_most_specific_one_wins() -> None:
    mappings = [MetricMapping(tag="lr", name="lr"),
                MetricMapping(tag="lr", name="lr-a", source="tb", run_path="lr_group/a"),
                MetricMapping(tag="lr", name="lr-root", run_path="")]
    series = [SeriesRef("rank-0", "tb", "lr_group/a", "lr"),
              SeriesRef("rank-0", "tb", "lr_group/b", "lr"),
              SeriesRef("rank-0", "tb", "", "lr")]
    curves = {c.name: c.series for c in resolve(mappings, series).curves}
    assert curves == {"lr": (SeriesRef("rank-0", "tb", "lr_group/b", "lr"),),
                      "lr-a": (SeriesRef("rank-0", "tb", "lr_group/a", "lr"),),
                      "lr-root": (SeriesRef("rank-0", "tb", "", "lr"),)}


@pytest.mark.parametrize(("mapping", "reason"), [
    ({"tag": "x", "name": "n", "run_path": "../up"}, r"mappings\[0\].run_path has an empty"),
    ({"tag": "x", "name": "n", "run_path": "/a"}, r"mappings\[0\].run_path starts with '/'"),
    ({"tag": "x", "name": "n", "source": "j", "run_path": "a"},
     "source 'j' is jsonl, and only TensorBoard sources have runs"),
])
def test_a_mapped_run_path_must_be_one_a_series_can_have(mapping: dict[str, str],
                                                         reason: str) -> None:
    document = {"version": 1, "sources": [{"id": "j", "kind": "jsonl", "path": "/a",
                                           "owner": "m"},
                                          {"id": "tb", "kind": "tensorboard", "path": "/tb",
                                           "owner": "m"}],
                "mappings": [mapping]}
    with pytest.raises(IntegrationError, match=reason):
        check_document(document, "i.yaml")
    ok = {**document, "mappings": [{"tag": "x", "name": "n", "source": "tb",
                                    "run_path": "lr_group/a"},
                                   {"tag": "x", "name": "m", "source": "tb"}]}
    assert [m.run_path for m in check_document(ok, "i.yaml")] == ["lr_group/a", None]
