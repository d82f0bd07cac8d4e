"""``tuneplane-admin run-export RUN --out DIR``: a run's whole data as files, to archive it
before deleting it.

- ``series/attempt-<n>/<member>/<source>.parquet``, one per series group (names
  percent-encoded: a collector chose them): every stored point (``run_path``, ``tag``,
  ``step``, ``wall_time``, ``value``), in step order;
- ``rich.parquet``: every rich record (attempt, member, source, tag, step, wall time,
  kind, plugin, file, its object's key and size), and ``objects/<sha256>``, each object's
  bytes once;
- ``manifest.json``: what was exported (each series file with its member and source),
  and counts to check it by.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

import asyncpg
import pyarrow as pa
import pyarrow.parquet as pq

from tuneplane.admin.settings import AdminSettings
from tuneplane.common import objectstore
from tuneplane.common.chunks import stored
from tuneplane.common.chunks.blob import Codec

CHUNKS = f"""
SELECT s.attempt, s.member, s.source, s.run_path, s.tag, {stored.SELECTED}
FROM series s JOIN curve_chunks c USING (series_id)
WHERE s.run_id = $1
ORDER BY s.attempt, s.member, s.source, s.run_path, s.tag, c.step_min, c.batch_id,
         c.chunk_index
"""
RICH = """
SELECT attempt, member, source, tag, step, wall_time, kind, plugin_name, file, object_key,
       bytes FROM rich_records WHERE run_id = $1
ORDER BY attempt, member, source, tag, step, batch_id, record_index
"""


def safe(name: str) -> str:
    """A member's or source's name (a collector's words) as one file name: percent-encoded,
    dots too, so no name is a path, ``..``, or another's file."""
    return quote(name, safe="").replace(".", "%2E") or "%"


def read(client: Any, bucket: str, key: str) -> bytes:
    return bytes(client.get_object(Bucket=bucket, Key=key)["Body"].read())


async def export(conn: asyncpg.Connection, client: object, bucket: str, run_id: str,
                 out: Path) -> dict[str, object]:
    codec = Codec()
    groups: dict[tuple[int, str, str], list[pa.Table]] = {}
    for (attempt, member, source, run_path, tag), rows in itertools.groupby(
            await conn.fetch(CHUNKS, run_id), key=lambda r: tuple(r[:5])):
        points = stored.in_step_order([stored.points_of(r, codec) for r in rows])
        n = len(points.steps)
        groups.setdefault((attempt, member, source), []).append(pa.table({
            "run_path": pa.repeat(run_path, n), "tag": pa.repeat(tag, n),
            "step": points.steps, "wall_time": points.wall_times, "value": points.values}))
    files = []
    for (attempt, member, source), tables in groups.items():
        path = out / "series" / f"attempt-{attempt}" / safe(member) / f"{safe(source)}.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.concat_tables(tables), path, compression="zstd")
        files.append({"attempt": attempt, "member": member, "source": source,
                      "file": str(path.relative_to(out))})
    rich = [dict(r) for r in await conn.fetch(RICH, run_id)]
    if rich:
        pq.write_table(pa.table({k: [r[k] for r in rich] for k in rich[0]}),
                       out / "rich.parquet", compression="zstd")
    objects = out / "objects"
    for key in sorted({r["object_key"] for r in rich}):
        objects.mkdir(parents=True, exist_ok=True)
        body = await asyncio.to_thread(read, client, bucket, key)
        (objects / key.rsplit("/", 1)[-1]).write_bytes(body)
    manifest: dict[str, object] = {
        "run_id": run_id, "series_groups": len(groups),
        "points": sum(t.num_rows for tables in groups.values() for t in tables),
        "rich_records": len(rich), "objects": len({r["object_key"] for r in rich}),
        "series_files": files}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def cmd_export(args: argparse.Namespace, settings: AdminSettings) -> int:
    async def run() -> dict[str, object]:
        conn = await asyncpg.connect(settings.database_url.get())
        try:
            if not await conn.fetchval("SELECT 1 FROM batch_ledger WHERE run_id = $1 LIMIT 1",
                                       args.run):
                raise ValueError(f"run {args.run!r} holds no telemetry (or does not exist)")
            return await export(conn, objectstore.s3_client(settings.s3_endpoint.get()),
                                settings.s3_bucket.get(), args.run, args.out)
        finally:
            await conn.close()
    if args.out.exists() and any(args.out.iterdir()):
        raise ValueError(f"{args.out} is not empty: export into a new directory")
    args.out.mkdir(parents=True, exist_ok=True)
    print(json.dumps(asyncio.run(run())))
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    e = sub.add_parser("run-export", help="write a run's curves (Parquet, one file per series "
                                          "group) and rich records (their index and objects) "
                                          "to a new directory, to archive it before deleting")
    e.add_argument("run")
    e.add_argument("--out", type=Path, required=True, help="a new (or empty) directory")
    e.set_defaults(func=cmd_export)
