"""``tuneplane-admin repack-chunks``: chunks stored as arrays (before migration 0037) become
packed blobs holding the very same bits (the projector's checksum unchanged), a page per
transaction; stopped midway, the chunks are in both forms, read alike, and a second run
finishes; chunks packed already and other runs' chunks are left as they are, and so are
chunks whose arrays cannot be read: named, while the others are repacked."""

from __future__ import annotations

import math
import uuid
from typing import Any

import asyncpg
import numpy as np
import pytest

from tests.admin.test_projects import admin
from tuneplane.admin import repack
from tuneplane.common.chunks.blob import Codec
from tuneplane.projector.checksum import checksum

VALUES = [1.5, -0.0, math.nan, math.inf, -math.inf, 5e-324, 0.1]
INSERT = """
INSERT INTO curve_chunks (series_id, batch_id, chunk_index, n, step_min, step_max, v_first,
                          v_last, w_first, w_last, steps, wall_times, "values", packed)
VALUES ($1, $2, $3, $4, $5, $6, 0, 0, 0, 0, $7, $8, $9, $10)
"""


async def fill(db: asyncpg.Connection, run_id: str, chunks: int) -> None:
    """Two series of ``chunks`` chunks each as arrays (what 0036 stored), and one packed."""
    for tag in ("loss", "acc"):
        series_id = await db.fetchval(
            "INSERT INTO series (run_id, attempt, member, source, tag) "
            "VALUES ($1, 1, 'rank-0', 'train', $2) RETURNING series_id", run_id, tag)
        for i in range(chunks):
            steps = [i * 10 + k for k in range(len(VALUES))]
            walls = [1.7e9 + s * 0.37 for s in steps]
            await db.execute(INSERT, series_id, f"b-{i}", 0, len(steps), steps[0], steps[-1],
                             steps, walls, [v * (i + 1) for v in VALUES], None)
        steps = [1000, 1001]
        blob = Codec().encode(np.array(steps), np.array([1.0, 2.0]), np.array([3.0, 4.0]))
        await db.execute(INSERT, series_id, "b-packed", 0, 2, 1000, 1001, None, None, None,
                         blob)


async def forms(db: asyncpg.Connection, run_id: str) -> dict[str, int]:
    row = await db.fetchrow("""
        SELECT count(*) FILTER (WHERE c.packed IS NOT NULL) AS packed,
               count(*) FILTER (WHERE c.steps IS NOT NULL) AS arrays
        FROM curve_chunks c JOIN series s USING (series_id) WHERE s.run_id = $1""", run_id)
    assert row is not None
    return dict(row)


async def test_chunks_are_repacked_with_the_same_points_and_the_command_says_so(
        db: asyncpg.Connection, run_id: str) -> None:
    other = f"other-{uuid.uuid4().hex[:8]}"
    await fill(db, run_id, 5)
    await fill(db, other, 1)
    before = await checksum(db, run_id)
    done = admin("repack-chunks", "--run-prefix", run_id, "--page", "3")
    assert "repacked 10 chunks" in done.stdout, done.stdout
    assert await forms(db, run_id) == {"packed": 12, "arrays": 0}
    assert await checksum(db, run_id) == before
    assert await forms(db, other) == {"packed": 2, "arrays": 2}  # not its run
    again = admin("repack-chunks", "--run-prefix", run_id)
    assert "repacked 0 chunks" in again.stdout, again.stdout


async def test_a_repack_stopped_midway_leaves_both_forms_read_alike_and_goes_on(
        db: asyncpg.Connection, run_id: str, monkeypatch: pytest.MonkeyPatch) -> None:
    await fill(db, run_id, 4)
    before = await checksum(db, run_id)
    made = 0
    really = repack.packed

    def stopping(row: Any, codec: Codec) -> bytes:
        nonlocal made
        made += 1
        if made > 3:
            raise KeyboardInterrupt  # a signal, in the second page
        return really(row, codec)
    monkeypatch.setattr(repack, "packed", stopping)
    with pytest.raises(KeyboardInterrupt):
        await repack.repack(db, 3, run_id)
    assert made == 4  # the fault took effect where meant
    assert await forms(db, run_id) == {"packed": 5, "arrays": 5}  # the first page only
    assert await checksum(db, run_id) == before
    monkeypatch.setattr(repack, "packed", really)
    assert (await repack.repack(db, 3, run_id))[0] == 5
    assert await forms(db, run_id) == {"packed": 10, "arrays": 0}
    assert await checksum(db, run_id) == before


def test_a_page_below_one_is_refused_by_name() -> None:
    done = admin("repack-chunks", "--page", "0", ok=False)
    assert "--page must be at least 1, not 0" in done.stderr


async def test_a_page_is_bounded_by_its_points_too(db: asyncpg.Connection,
                                                   run_id: str) -> None:
    rows = [{"n": n} for n in (600, 300, 200, 50)]
    assert repack.paged(rows, 1000) == rows[:2]
    assert repack.paged(rows[2:], 100) == rows[2:3]  # one at least
    await fill(db, run_id, 3)  # 6 chunks of 7 points as arrays
    before = await checksum(db, run_id)
    assert (await repack.repack(db, 100, run_id, page_points=10))[0] == 6  # a page each
    assert await forms(db, run_id) == {"packed": 8, "arrays": 0}
    assert await checksum(db, run_id) == before


async def test_a_damaged_chunk_is_left_as_it_is_and_named_and_the_others_repacked(
        db: asyncpg.Connection, run_id: str) -> None:
    """One chunk that cannot be repacked must not hold back all those after it, run after
    run: it is left as arrays, untouched, named, and the command exits 1."""
    await fill(db, run_id, 3)
    short, nulled = await db.fetch(
        "SELECT c.series_id, c.batch_id FROM curve_chunks c JOIN series s USING (series_id) "
        "WHERE s.run_id = $1 AND c.batch_id = 'b-1' ORDER BY c.series_id", run_id)
    await db.execute("UPDATE curve_chunks SET wall_times = wall_times[1:3] "
                     "WHERE series_id = $1 AND batch_id = 'b-1'", short["series_id"])
    await db.execute("UPDATE curve_chunks SET \"values\"[2] = NULL "
                     "WHERE series_id = $1 AND batch_id = 'b-1'", nulled["series_id"])
    rows = ("SELECT c::text FROM curve_chunks c WHERE batch_id = 'b-1' AND "
            "series_id = ANY($1::bigint[]) ORDER BY series_id")  # as text: NaN equals NaN
    damaged = await db.fetch(rows, [short["series_id"], nulled["series_id"]])
    for attempt in range(2):
        done = admin("repack-chunks", "--run-prefix", run_id, "--page", "2", ok=False)
        assert done.returncode == 1, done.stderr
        assert f"repacked {4 if attempt == 0 else 0} chunks" in done.stdout, done.stdout
        assert (f"left as arrays: chunk b-1/0 of series {short['series_id']}: its arrays "
                "cannot be read: a chunk's columns differ in length: 7 steps, 3 wall times, "
                "7 values") in done.stderr, done.stderr
        assert (f"left as arrays: chunk b-1/0 of series {nulled['series_id']}: its arrays "
                "cannot be read: not a one-dimensional array without NULLs") in done.stderr
        assert "2 chunks left as arrays, read as before; the others are repacked" in \
            done.stderr
        assert await forms(db, run_id) == {"packed": 6, "arrays": 2}
    assert await db.fetch(rows, [short["series_id"], nulled["series_id"]]) == damaged
