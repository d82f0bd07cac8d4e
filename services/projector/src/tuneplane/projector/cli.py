"""``tuneplane-projector``: the projector worker, and replays of the batches topic.

    tuneplane-projector [worker]                 one worker of the consumer group
    tuneplane-projector replay --from-offset N   replay into the live read models
    tuneplane-projector replay --from-time ISO
    tuneplane-projector redrive                  the dead-letter topic, after a fix
    tuneplane-projector rebuild                  whole topic → fresh tables, swapped in
    tuneplane-projector checksum                 checksum of the read models

Reads TUNEPLANE_DATABASE_URL and TUNEPLANE_KAFKA_BOOTSTRAP; rich records also need
TUNEPLANE_S3_ENDPOINT and TUNEPLANE_S3_BUCKET (with the AWS credential variables).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import datetime as dt
import json
import os
import sys

import asyncpg
import faust

from tuneplane.common import schedule
from tuneplane.common.kafka import topics
from tuneplane.common.kafka.adapter import StartAt
from tuneplane.common.metrics import exposition
from tuneplane.contract import flags
from tuneplane.contract.settings import SettingsError
from tuneplane.projector.app import create_app, object_store
from tuneplane.projector.archiver import TRIM_LOCK, ArchiveReader, archive
from tuneplane.projector.checksum import checksum
from tuneplane.projector.purge import purge
from tuneplane.projector.rebuild import rebuild
from tuneplane.projector.replay import replay
from tuneplane.projector.settings import ProjectorSettings
from tuneplane.projector.trim import trim
from tuneplane.projector.writer import PostgresWriter


def progress(done: int, total: int) -> None:
    share = 100.0 * done / total if total else 100.0
    print(f"replayed {done:,} of {total:,} records ({share:.0f}%)", file=sys.stderr, flush=True)


def cmd_worker(args: argparse.Namespace) -> int:
    exposition.serve(args.settings.metrics_port, args.settings.metrics_host)
    worker = faust.Worker(create_app(args.settings), loglevel=args.loglevel)
    worker.execute_from_commandline()  # returns only when the worker stops
    return 0


async def run_replay(args: argparse.Namespace) -> int:
    s: ProjectorSettings = args.settings
    if args.from_time:
        moment = dt.datetime.fromisoformat(args.from_time)
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=dt.UTC)
        start = StartAt(timestamp_ms=int(moment.timestamp() * 1000))
    else:
        start = StartAt(offset=args.from_offset)
    pool = await asyncpg.create_pool(s.database_url, min_size=1, max_size=2)
    conn = await asyncpg.connect(s.database_url)
    await conn.execute("SELECT pg_advisory_lock_shared($1)", TRIM_LOCK)  # no trim meanwhile
    topic = topics.BATCHES_DLQ if args.redrive else topics.BATCHES
    try:
        writer = PostgresWriter(pool, object_store(s), max_series=s.max_series)
        report, _ = await replay(s.kafka_bootstrap, writer, start, progress=progress,
                                 topic=topic, archived=archived(s, conn, topic))
    finally:
        await conn.close()
        await pool.close()
    print(json.dumps({"records": report.records, "applied": report.applied,
                      "duplicates": report.duplicates, "poison": report.poison}))
    return 0


async def run_rebuild(args: argparse.Namespace) -> int:
    s: ProjectorSettings = args.settings
    conn = await asyncpg.connect(s.database_url)
    await conn.execute("SELECT pg_advisory_lock_shared($1)", TRIM_LOCK)  # no trim meanwhile
    try:
        report = await rebuild(s.database_url, s.kafka_bootstrap, object_store(s), progress,
                               max_series=s.max_series,
                               archived=archived(s, conn, topics.BATCHES))
    finally:
        await conn.close()
    print(json.dumps({"records": report.records, "applied": report.applied,
                      "duplicates": report.duplicates, "poison": report.poison,
                      "swapped": True}))
    return 0


async def run_checksum(args: argparse.Namespace) -> int:
    conn = await asyncpg.connect(args.settings.database_url)
    try:
        print(json.dumps(await checksum(conn, args.run_prefix), indent=2))
    finally:
        await conn.close()
    return 0


def archived(settings: ProjectorSettings, conn: asyncpg.Connection,
             topic: str) -> ArchiveReader | None:
    """The topic's archive, read where Kafka holds nothing more (none: no object store)."""
    objects = object_store(settings)
    return None if objects is None else ArchiveReader(conn, objects, topic)


async def run_archive(args: argparse.Namespace) -> int:
    s: ProjectorSettings = args.settings
    objects = object_store(s)
    if objects is None:
        raise SettingsError("archiving needs the object store (TUNEPLANE_S3_ENDPOINT, "
                            "TUNEPLANE_S3_BUCKET)")
    conn = await asyncpg.connect(s.database_url)
    try:
        done = await archive(s.kafka_bootstrap, conn, objects, topic=args.topic)
        if args.trim:
            done.trimmed = await trim(s.kafka_bootstrap, conn, topic=args.topic,
                                      keep_groups=[s.group_id, *args.keep_group],
                                      if_consumed=args.keep_group_if_consumed)
    finally:
        await conn.close()
    print(json.dumps(dataclasses.asdict(done)))
    return 0


async def run_purge(args: argparse.Namespace) -> int:
    conn = await asyncpg.connect(args.settings.database_url)
    try:
        done = await purge(conn, object_store(args.settings))
    finally:
        await conn.close()
    print(json.dumps(dataclasses.asdict(done)))
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tuneplane-projector", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.set_defaults(func=cmd_worker, loglevel="info")
    sub = p.add_subparsers(dest="command")
    w = sub.add_parser("worker", help="run one worker of the consumer group (the default)")
    w.add_argument("--loglevel", default="info", help="faust worker log level")
    flags.add_to(w, ProjectorSettings)  # --metrics-port
    w.set_defaults(func=cmd_worker)
    r = sub.add_parser("replay", help="replay the topic into the live read models "
                                      "(idempotent: what is there already has no effect)")
    where = r.add_mutually_exclusive_group(required=True)
    where.add_argument("--from-offset", type=int, help="every partition from this offset")
    where.add_argument("--from-time", help="every partition from this time (ISO 8601, "
                                           "UTC unless it says otherwise)")
    r.set_defaults(func=lambda a: asyncio.run(run_replay(a)), redrive=False)
    d = sub.add_parser("redrive", help="project the dead-letter topic's batches into the live "
                                       "read models after a fix: each once (the ledger drops "
                                       "what is there); what is still poison stays in the DLQ")
    d.add_argument("--from-offset", type=int, default=0,
                   help="every DLQ partition from this offset (default 0)")
    d.set_defaults(func=lambda a: asyncio.run(run_replay(a)), redrive=True, from_time=None)
    b = sub.add_parser("rebuild", help="project the whole topic into fresh tables and swap "
                                       "them in, reporting progress")
    b.set_defaults(func=lambda a: asyncio.run(run_rebuild(a)))
    a = sub.add_parser("archive", help="write what the topic holds beyond its archive to the "
                                       "object store as Parquet segments; --trim then moves "
                                       "each partition's log start to the archived end")
    a.add_argument("--topic", default=topics.BATCHES)
    a.add_argument("--trim", action="store_true",
                   help="trim the topic below the archive, never past the committed offset "
                        "of a --keep-group")
    a.add_argument("--keep-group", action="append", default=[], metavar="GROUP",
                   help="a consumer group that must not miss a record, besides the "
                        "projectors' (repeatable): the exporter's, when export is on")
    a.add_argument("--keep-group-if-consumed", action="append", default=[], metavar="GROUP",
                   help="as --keep-group, for a group that starts at the topic's end when it "
                        "first consumes (the exporter's): one that never committed holds "
                        "nothing back")
    schedule.add_arguments(a)
    a.set_defaults(func=lambda a: asyncio.run(schedule.repeat(a, lambda: run_archive(a),
                                                              fatal=(SettingsError,))))
    g = sub.add_parser("purge", help="remove what deletions whose undo window has ended "
                                     "hold: their read-model rows, and the objects of their "
                                     "rich records no other record references (safe to run "
                                     "on several replicas at once, from a schedule)")
    schedule.add_arguments(g)
    g.set_defaults(func=lambda a: asyncio.run(schedule.repeat(a, lambda: run_purge(a),
                                                              fatal=(SettingsError,))))
    c = sub.add_parser("checksum", help="checksum of the read models by natural keys")
    c.add_argument("--run-prefix", default="", help="only runs whose id starts so")
    c.set_defaults(func=lambda a: asyncio.run(run_checksum(a)))
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        args.settings = flags.settings(ProjectorSettings, os.environ, args)
        result: int = args.func(args)
    except SettingsError as exc:
        print(f"tuneplane-projector: {exc}", file=sys.stderr)
        return 2
    return result


if __name__ == "__main__":
    sys.exit(main())
