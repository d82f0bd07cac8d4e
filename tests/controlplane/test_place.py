"""Where a run stands, read with a caller's standing in one statement (real PostgreSQL):
the same as ``of_attempt`` reads on its own, for a token's standing and a session's, for
a run of a project, an unknown run, and deleted runs and attempts."""

from __future__ import annotations

import datetime as dt
import uuid

import asyncpg

from tests.support.credentials import user_token
from tests.support.environment import Endpoints
from tuneplane.common.tokens import TokenKind, TokenSigner
from tuneplane.controlplane import api_tokens, projects, runs, sessions
from tuneplane.controlplane.projects import Asked, Place

ARTIFACT = {"version": 1, "sources": [
    {"id": "train", "kind": "jsonl", "path": "m.jsonl", "owner": "rank-0"}]}


async def test_a_place_read_with_a_standing_is_the_place_read_alone(
        initialised: Endpoints, db: asyncpg.Connection) -> None:
    project = f"place-{uuid.uuid4().hex[:8]}"
    await projects.create(db, project)
    signer = TokenSigner(initialised.jwt_secret)
    token = await user_token(db, initialised, "viewer", roles={project: "viewer"})
    claims = signer.verify(token, TokenKind.USER, now=dt.datetime.now(dt.UTC).timestamp())
    name, ident = str(claims["sub"]), str(claims["jti"])
    cookie = await sessions.start(db, signer, name, now=dt.datetime.now(dt.UTC))
    session_id = str(signer.verify(cookie, TokenKind.SESSION, now=0)["sid"])
    kept, gone_attempt, gone_run = (f"{project}-{what}" for what in ("kept", "one", "all"))
    for run_id in (kept, gone_attempt, gone_run):
        await runs.create_run(db, ARTIFACT, created_by="test", now=dt.datetime.now(dt.UTC),
                              run_id=run_id, project=project)
    for run_id, attempt in ((gone_attempt, 2), (gone_run, 0)):
        await db.execute("INSERT INTO deletions (run_id, project, attempt, deleted_by, "
                         "purge_after) VALUES ($1, $2, $3, 'test', now())", run_id, project,
                         attempt)
    cases: list[tuple[Asked, Place]] = [
        ((kept, 1), Place(kept, 1, project, False)),
        ((kept, None), Place(kept, None, project, False)),
        ((gone_attempt, 2), Place(gone_attempt, 2, project, True)),
        ((gone_attempt, 1), Place(gone_attempt, 1, project, False)),
        ((gone_run, 1), Place(gone_run, 1, None, True)),
        ((f"{project}-never", 1), Place(f"{project}-never", 1, None, False)),
    ]
    for asked, expected in cases:
        assert await projects.of_attempt(db, *asked) == expected
        by_token = await api_tokens.standing(db, ident, name, asked)
        by_session = await sessions.standing(db, session_id, name, asked)
        assert (by_token.place, by_session.place) == (expected, expected), asked
        assert (by_token.refusal, by_session.refusal) == (None, None)
        assert by_token.roles == by_session.roles == {project: projects.Role.VIEWER}
    alone = await api_tokens.standing(db, ident, name)
    assert (alone.place, alone.roles) == (None, {project: projects.Role.VIEWER})
