"""The metric mapping frozen per attempt, and canonical curves resolved through it.

An attempt's mapping is written once, when the attempt starts, and never changes.
A canonical curve is the set of per-member series whose (source, run path, tag) the
mapping names; values of different members stay apart. A mapping that names no source
takes the tag of any source, one that names no run path takes the tag of every run
(TensorBoard's runs: ``add_scalars`` sub-directories), each series still apart; the most
specific mapping wins (source and run path, then source, then run path, then the tag).
An aggregate (``aggregate_owner``) is taken only from its owner member. A series no
mapping names is *unmapped*: its semantics are unknown and never guessed from its tag.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from tuneplane.common.db import Connection
from tuneplane.controlplane.errors import MappingFrozen
from tuneplane.telemetry.v1.integration import MetricMapping


@dataclass(frozen=True, slots=True, order=True)
class SeriesRef:
    member: str
    source: str
    run_path: str  # TensorBoard's run below the log directory; '' for the root
    tag: str


@dataclass(frozen=True, slots=True)
class CanonicalCurve:
    name: str
    goal: str | None
    unit: str | None
    aggregate: bool
    series: tuple[SeriesRef, ...]


@dataclass(frozen=True, slots=True)
class Resolution:
    curves: tuple[CanonicalCurve, ...]
    unmapped: tuple[SeriesRef, ...]        # unknown semantics
    not_owner: tuple[SeriesRef, ...]       # an aggregate's copy from a member not its owner


def resolve(mappings: list[MetricMapping], series: list[SeriesRef]) -> Resolution:
    """Pure: which series make up which canonical curve."""
    by_key = {(m.source, m.run_path, m.tag): m for m in mappings}
    members: dict[str, list[SeriesRef]] = {m.name: [] for m in mappings}
    unmapped, not_owner = [], []
    for ref in sorted(series):
        mapping = next((by_key[k] for k in ((ref.source, ref.run_path, ref.tag),
                                            (ref.source, None, ref.tag),
                                            (None, ref.run_path, ref.tag),
                                            (None, None, ref.tag)) if k in by_key), None)
        if mapping is None:
            unmapped.append(ref)
        elif mapping.aggregate_owner is not None and ref.member != mapping.aggregate_owner:
            not_owner.append(ref)
        else:
            members[mapping.name].append(ref)
    curves = []
    for m in mappings:
        if m.name in members:
            curves.append(CanonicalCurve(m.name, m.goal, m.unit, m.aggregate_owner is not None,
                                         tuple(members.pop(m.name))))
    return Resolution(tuple(curves), tuple(unmapped), tuple(not_owner))


def to_json(mappings: list[MetricMapping]) -> str:
    return json.dumps([{k: v for k, v in asdict(m).items() if v is not None} for m in mappings],
                      sort_keys=True)


async def freeze(conn: Connection, run_id: str, attempt: int,
                 mappings: list[MetricMapping]) -> bool:
    """Freeze the attempt's mapping; True when frozen now, False when already so (same)."""
    document = to_json(mappings)
    inserted = await conn.fetchval(
        "INSERT INTO attempt_mappings (run_id, attempt, mapping) VALUES ($1, $2, $3::jsonb) "
        "ON CONFLICT DO NOTHING RETURNING 1", run_id, attempt, document)
    if inserted:
        return True
    frozen = await conn.fetchval("SELECT mapping = $3::jsonb FROM attempt_mappings "
                                 "WHERE run_id = $1 AND attempt = $2", run_id, attempt, document)
    if not frozen:
        raise MappingFrozen(f"run {run_id} attempt {attempt} has a different mapping frozen; "
                            "a mapping never changes within an attempt (start a new attempt)")
    return False


async def frozen_mapping(conn: Connection, run_id: str,
                         attempt: int) -> list[MetricMapping] | None:
    document = await conn.fetchval("SELECT mapping::text FROM attempt_mappings "
                                   "WHERE run_id = $1 AND attempt = $2", run_id, attempt)
    return None if document is None else [MetricMapping(**m) for m in json.loads(document)]


SERIES = "SELECT member, source, run_path, tag FROM series WHERE run_id = $1 AND attempt = $2"


async def canonical(conn: Connection, run_id: str, attempt: int, *,
                    tags: Sequence[str] | None = None) -> Resolution:
    """The attempt's series resolved through its frozen mapping (all unmapped without one);
    with ``tags``, only the series of these: a series' resolution depends only on the
    mappings of its tag, so a curve's needs only its mappings' tags (an index lookup in an
    attempt of 100,000 series)."""
    if tags is None:
        rows = await conn.fetch(SERIES, run_id, attempt)
    else:
        rows = await conn.fetch(SERIES + " AND tag = ANY($3::text[])", run_id, attempt,
                                list(tags))
    mappings = await frozen_mapping(conn, run_id, attempt) or []
    return resolve(mappings, [SeriesRef(*row) for row in rows])
