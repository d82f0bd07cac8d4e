"""The host-local SQLite spool: sealed batches and the source positions they advance.

Sealing a batch and advancing its source's position happen in one transaction
(WAL, synchronous=FULL), so after any crash a point is either in a sealed batch
or still ahead of the saved position — never both, never neither. A batch keeps
its identity and bytes until an ACK deletes it.
"""

from __future__ import annotations

import os
import secrets
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tuneplane.telemetry.v1 import telemetry_pb2 as pb

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS positions (
    source TEXT PRIMARY KEY, file_key TEXT NOT NULL, offset INTEGER NOT NULL,
    line INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS batches (
    sequence INTEGER PRIMARY KEY, payload BLOB NOT NULL, points INTEGER NOT NULL,
    quarantined TEXT);
"""


class SpoolError(RuntimeError):
    """The spool cannot be used as configured; the message says why."""


@dataclass(frozen=True, slots=True)
class Owner:
    run_id: str
    attempt: int
    member: str


@dataclass(frozen=True, slots=True)
class SavedPosition:
    file_key: str
    offset: int
    line: int


@dataclass(frozen=True, slots=True)
class SealedBatch:
    sequence: int
    payload: bytes
    points: int


class Spool:
    FILE = "spool.sqlite3"

    def __init__(self, directory: Path, owner: Owner) -> None:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.path = directory / self.FILE
        self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.execute("PRAGMA busy_timeout=30000")
        self._db.executescript(SCHEMA)
        os.chmod(self.path, 0o600)
        self.owner = owner
        with self.transaction() as db:
            meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
            if not meta:
                # A new spool is a new epoch: its batch ids never collide with a lost spool's.
                meta = {"epoch": secrets.token_hex(8), "next_sequence": "1",
                        "owner": f"{owner.run_id}/{owner.attempt}/{owner.member}"}
                db.executemany("INSERT INTO meta VALUES (?, ?)", meta.items())
        expected = f"{owner.run_id}/{owner.attempt}/{owner.member}"
        if meta["owner"] != expected:
            raise SpoolError(f"spool {self.path} belongs to {meta['owner']}, not {expected}; "
                             "give each member its own spool directory")
        self.epoch = meta["epoch"]

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield self._db
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def position(self, source: str) -> SavedPosition | None:
        row = self._db.execute("SELECT file_key, offset, line FROM positions WHERE source = ?",
                               (source,)).fetchone()
        return SavedPosition(*row) if row else None

    def seal(self, chunks: list[pb.SeriesChunk], source: str, position: SavedPosition,
             sealed_at: float) -> int | None:
        """Seal ``chunks`` as the next batch and save ``position`` in one transaction.

        With no chunks (only malformed lines were read) only the position moves.
        Returns the batch's sequence, or None when nothing was sealed.
        """
        with self.transaction() as db:
            sequence: int | None = None
            if chunks:
                sequence = int(db.execute(
                    "SELECT value FROM meta WHERE key = 'next_sequence'").fetchone()[0])
                batch = pb.Batch(
                    identity=pb.BatchIdentity(run_id=self.owner.run_id,
                                              attempt=self.owner.attempt,
                                              member=self.owner.member,
                                              spool_epoch=self.epoch, sequence=sequence),
                    chunks=chunks, sealed_at=sealed_at)
                db.execute("INSERT INTO batches (sequence, payload, points) VALUES (?, ?, ?)",
                           (sequence, batch.SerializeToString(deterministic=True),
                            sum(len(c.steps) for c in chunks)))
                db.execute("UPDATE meta SET value = ? WHERE key = 'next_sequence'",
                           (str(sequence + 1),))
            db.execute("INSERT INTO positions VALUES (?, ?, ?, ?) ON CONFLICT (source) DO UPDATE "
                       "SET file_key = excluded.file_key, offset = excluded.offset, "
                       "line = excluded.line",
                       (source, position.file_key, position.offset, position.line))
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
