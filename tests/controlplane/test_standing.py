"""Whether a workload token still stands: the rule as a pure function of claims and facts,
and the facts as PostgreSQL holds them (attempts ended and backdated, nodes revoked and
enrolled again)."""

from __future__ import annotations

import datetime as dt
import json
import uuid

import asyncpg
import pytest

from tests.support.control import ARTIFACT
from tuneplane.common.tokens import WorkloadClaims
from tuneplane.controlplane import nodes, runs, standing
from tuneplane.controlplane.standing import (
    DRAIN_MARGIN_SECONDS,
    UNKNOWN,
    AttemptFacts,
    NodeFacts,
    refusal,
)
from tuneplane.telemetry.v1.identity import MemberKey

DRAIN = 30
WINDOW = DRAIN + DRAIN_MARGIN_SECONDS
MEMBER = MemberKey("run-a", 2, "rank-0")


def claims(node: str | None = None, issued_at: int = 1_000) -> WorkloadClaims:
    return WorkloadClaims(MEMBER, expires_at=issued_at + 900, issued_at=issued_at, node=node)


def test_a_running_attempt_and_one_ended_within_the_drain_window_stand() -> None:
    assert refusal(claims(), AttemptFacts("running", None), None, drain_seconds=DRAIN) is None
    assert refusal(claims(), AttemptFacts("finished", WINDOW - 1), None,
                   drain_seconds=DRAIN) is None


@pytest.mark.parametrize("state", ["finished", "failed", "cancelled"])
def test_an_attempt_ended_beyond_the_drain_window_is_refused_naming_it_and_its_state(
        state: str) -> None:
    why = refusal(claims(), AttemptFacts(state, WINDOW + 1), None, drain_seconds=DRAIN)
    assert why is not None
    assert f"run 'run-a' attempt 2 ended ({state})" in why
    assert f"beyond the drain window of {WINDOW} s" in why


def test_attempts_the_control_plane_never_started_stand_for_admin_tokens_only() -> None:
    assert refusal(claims(), None, None, drain_seconds=DRAIN) is None
    why = refusal(claims("node-1"), None, NodeFacts(500, revoked=False), drain_seconds=DRAIN)
    assert why is not None
    assert "never started that attempt" in why


def test_a_token_through_a_revoked_unknown_or_re_enrolled_node_is_refused() -> None:
    running = AttemptFacts("running", None)
    assert refusal(claims("node-1"), running, NodeFacts(500, revoked=False),
                   drain_seconds=DRAIN) is None
    revoked = refusal(claims("node-1"), running, NodeFacts(500, revoked=True),
                      drain_seconds=DRAIN)
    assert revoked is not None
    assert "issued through node node-1, which was revoked" in revoked
    gone = refusal(claims("node-1"), running, None, drain_seconds=DRAIN)
    assert gone is not None
    assert "which is not enrolled" in gone
    replaced = refusal(claims("node-1", issued_at=1_000), running,
                       NodeFacts(1_001, revoked=False), drain_seconds=DRAIN)
    assert replaced is not None
    assert "before its latest enrollment" in replaced


def test_facts_that_could_not_be_looked_up_refuse_nothing() -> None:
    assert refusal(claims("node-1"), UNKNOWN, UNKNOWN, drain_seconds=DRAIN) is None
    # what is known still counts
    assert refusal(claims("node-1"), UNKNOWN, NodeFacts(1, revoked=True),
                   drain_seconds=DRAIN) is not None
    assert refusal(claims("node-1"), AttemptFacts("failed", WINDOW + 5), UNKNOWN,
                   drain_seconds=DRAIN) is not None


def test_facts_age_from_when_they_were_read() -> None:
    ended = AttemptFacts("finished", 10.0)
    assert ended.aged(WINDOW).ended_ago == 10.0 + WINDOW
    assert AttemptFacts("running", None).aged(100).ended_ago is None


async def test_the_facts_are_read_from_postgresql(db: asyncpg.Connection, run_id: str) -> None:
    assert await standing.attempt_facts(db, run_id, 1) is None
    await runs.create_run(db, json.loads(json.dumps(ARTIFACT)), created_by="test",
                          now=dt.datetime.now(dt.UTC), run_id=run_id)
    assert await runs.start_attempt(db, run_id) == 1
    assert await standing.attempt_facts(db, run_id, 1) == AttemptFacts("running", None)
    assert await runs.end_attempt(db, run_id, 1, "failed")
    await db.execute("UPDATE attempts SET ended_at = now() - interval '5 minutes' "
                     "WHERE run_id = $1", run_id)
    found = await standing.attempt_facts(db, run_id, 1)
    assert found is not None
    assert found.state == "failed"
    assert found.ended_ago is not None
    assert found.ended_ago >= 300

    name = f"node-{uuid.uuid4().hex[:8]}"
    assert await standing.node_facts(db, "node-none") is None
    token = await nodes.new_enrollment_token(db, name, created_by="test",
                                             now=dt.datetime.now(dt.UTC),
                                             ttl=dt.timedelta(minutes=5))
    enrolled_at = dt.datetime.now(dt.UTC).replace(microsecond=0)
    node = await nodes.enroll(db, token, "host", now=enrolled_at)
    assert await standing.node_facts(db, node.node_id) == NodeFacts(
        int(enrolled_at.timestamp()), revoked=False)
    assert (await nodes.revoke(db, name, now=dt.datetime.now(dt.UTC))).node
    assert await standing.node_facts(db, node.node_id) == NodeFacts(
        int(enrolled_at.timestamp()), revoked=True)
