"""The host-local SQLite spool: sealed batches and the source positions they advance.

Sealing a batch and advancing its source's position happen in one transaction
(WAL, synchronous=FULL), so after any crash a point is either in a sealed batch
or still ahead of the saved position — never both, never neither. A batch keeps
its identity and bytes until an ACK deletes it.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tuneplane.collector import spoolroot
from tuneplane.collector.draft import BatchDraft
from tuneplane.telemetry.v1 import telemetry_pb2 as pb
from tuneplane.telemetry.v1.identity import MemberKey

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS positions (
    source TEXT NOT NULL, file TEXT NOT NULL, file_key TEXT NOT NULL,
    offset INTEGER NOT NULL, line INTEGER NOT NULL, state TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (source, file));
CREATE TABLE IF NOT EXISTS rejections (
    source TEXT NOT NULL, reason TEXT NOT NULL, count INTEGER NOT NULL,
    PRIMARY KEY (source, reason));
CREATE TABLE IF NOT EXISTS batches (
    sequence INTEGER PRIMARY KEY, payload BLOB NOT NULL, points INTEGER NOT NULL,
    quarantined TEXT);
"""


class SpoolError(RuntimeError):
    """The spool cannot be used as configured; the message says why."""


class SpoolNotReady(SpoolError):
    """The spool file exists but holds no tables yet: a collector is creating it."""


@dataclass(frozen=True, slots=True)
class SavedPosition:
    """Where reading a file resumes, and what the reader must remember about it (JSON)."""

    file_key: str
    offset: int
    line: int = 1
    state: str = ""


@dataclass(frozen=True, slots=True)
class SealedBatch:
    sequence: int
    payload: bytes
    points: int


class Spool:
    FILE = "spool.sqlite3"

    def __init__(self, directory: Path, owner: MemberKey, *, mountinfo: str | None = None) -> None:
        try:
            spoolroot.prepare(directory, mountinfo)
        except spoolroot.SpoolPlaceError as exc:
            raise SpoolError(str(exc)) from None
        self.path = directory / self.FILE
        self.owner = owner
        try:
            self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA busy_timeout=30000")
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.executescript(SCHEMA)
            os.chmod(self.path, 0o600)
            meta = self._load_meta(owner)
        except sqlite3.DatabaseError as exc:
            raise SpoolError(
                f"spool database {self.path} is damaged ({exc}). It is kept as it is: move the "
                "spool directory aside to start a new spool epoch, or recover it") from None
        expected = str(owner)
        if meta["owner"] != expected:
            raise SpoolError(f"spool {self.path} belongs to {meta['owner']}, not {expected}; "
                             "give each member its own spool directory")
        self.epoch = meta["epoch"]

    def _load_meta(self, owner: MemberKey) -> dict[str, str]:
        with self.transaction() as db:
            meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
            if not meta:
                # A new spool is a new epoch: its batch ids never collide with a lost spool's.
                # os.urandom, not secrets: that imports hashlib and with it OpenSSL (~3 MiB).
                meta = {"epoch": os.urandom(8).hex(), "next_sequence": "1",
                        "owner": str(owner)}
                db.executemany("INSERT INTO meta VALUES (?, ?)", meta.items())
        return meta

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield self._db
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def position(self, source: str, file: str = "") -> SavedPosition | None:
        row = self._db.execute("SELECT file_key, offset, line, state FROM positions "
                               "WHERE source = ? AND file = ?", (source, file)).fetchone()
        return SavedPosition(*row) if row else None

    def seal(self, draft: BatchDraft, file: str, position: SavedPosition,
             sealed_at: float, rejected: dict[str, int] | None = None) -> int | None:
        """Seal ``draft`` as the next batch and save the file's ``position`` in one transaction.

        With an empty draft (only damaged records were read) only the position moves.
        ``rejected`` counts records refused on the way, by reason; they are added up.
        Returns the batch's sequence, or None when nothing was sealed.
        """
        with self.transaction() as db:
            sequence: int | None = None
            if not draft.empty():
                sequence = int(db.execute(
                    "SELECT value FROM meta WHERE key = 'next_sequence'").fetchone()[0])
                batch = pb.Batch(
                    identity=pb.BatchIdentity(run_id=self.owner.run_id,
                                              attempt=self.owner.attempt,
                                              member=self.owner.member,
                                              spool_epoch=self.epoch, sequence=sequence),
                    chunks=draft.chunks(), rich=draft.rich,
                    session_starts=draft.session_starts, sealed_at=sealed_at)
                db.execute("INSERT INTO batches (sequence, payload, points) VALUES (?, ?, ?)",
                           (sequence, batch.SerializeToString(deterministic=True), draft.points))
                db.execute("UPDATE meta SET value = ? WHERE key = 'next_sequence'",
                           (str(sequence + 1),))
            db.execute("INSERT INTO positions VALUES (?, ?, ?, ?, ?, ?) "
                       "ON CONFLICT (source, file) DO UPDATE SET file_key = excluded.file_key, "
                       "offset = excluded.offset, line = excluded.line, state = excluded.state",
                       (draft.source, file, position.file_key, position.offset, position.line,
                        position.state))
            db.executemany("INSERT INTO rejections VALUES (?, ?, ?) ON CONFLICT (source, reason) "
                           "DO UPDATE SET count = count + excluded.count",
                           [(draft.source, r, n) for r, n in (rejected or {}).items()])
            return sequence

    def pending(self, limit: int = 64) -> list[SealedBatch]:
        rows = self._db.execute(
            "SELECT sequence, payload, points FROM batches WHERE quarantined IS NULL "
            "ORDER BY sequence LIMIT ?", (limit,)).fetchall()
        return [SealedBatch(*row) for row in rows]

    def pending_count(self) -> int:
        return int(self._db.execute(
            "SELECT count(*) FROM batches WHERE quarantined IS NULL").fetchone()[0])

    def acknowledge(self, sequence: int) -> None:
        self._db.execute("DELETE FROM batches WHERE sequence = ?", (sequence,))

    def quarantine(self, sequence: int, reason: str) -> None:
        """Keep a batch the service will never accept, with the reason, out of the send queue."""
        self._db.execute("UPDATE batches SET quarantined = ? WHERE sequence = ?",
                         (reason, sequence))

    def quarantined(self) -> list[tuple[int, str]]:
        return self._db.execute("SELECT sequence, quarantined FROM batches "
                                "WHERE quarantined IS NOT NULL ORDER BY sequence").fetchall()

    def stored_bytes(self) -> int:
        return int(self._db.execute(
            "SELECT coalesce(sum(length(payload)), 0) FROM batches").fetchone()[0])

    def close(self) -> None:
        self._db.close()


def status(directory: Path) -> dict[str, object]:
    """What a spool holds, read without taking it over (for ``spool status``)."""
    path = directory / Spool.FILE
    if not path.exists():
        raise SpoolError(f"no spool at {directory} ({Spool.FILE} not found)")
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        if not db.execute("SELECT count(*) FROM sqlite_master WHERE name = 'meta'").fetchone()[0]:
            raise SpoolNotReady(f"spool {path} has no tables yet (a collector is creating it, "
                                "or it is empty); nothing is spooled in it")
        meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
        pending = db.execute("SELECT count(*), coalesce(sum(points), 0), "
                             "coalesce(sum(length(payload)), 0) FROM batches "
                             "WHERE quarantined IS NULL").fetchone()
        quarantined = db.execute("SELECT sequence, points, quarantined FROM batches "
                                 "WHERE quarantined IS NOT NULL ORDER BY sequence").fetchall()
        positions = db.execute("SELECT source, file, offset, line FROM positions "
                               "ORDER BY source, file").fetchall()
        rejections = db.execute("SELECT source, reason, count FROM rejections "
                                "ORDER BY source, reason").fetchall()
    except sqlite3.DatabaseError as exc:
        raise SpoolError(f"spool {path} is damaged ({exc}); it is kept as it is") from exc
    finally:
        db.close()
    return {
        "spool": str(directory), "owner": meta.get("owner"), "epoch": meta.get("epoch"),
        "next_sequence": int(meta.get("next_sequence", "1")),
        "pending": {"batches": pending[0], "points": pending[1], "bytes": pending[2]},
        "quarantined": [{"sequence": s, "points": p, "reason": r} for s, p, r in quarantined],
        "positions": [{"source": s, "file": f, "offset": o, "line": ln}
                      for s, f, o, ln in positions],
        "rejected": [{"source": s, "reason": r, "count": n} for s, r, n in rejections],
    }
