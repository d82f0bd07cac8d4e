"""``tuneplane-admin`` runs and attempts: create, start, end, show, freeze a mapping."""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
from pathlib import Path

import asyncpg

from tuneplane.admin.settings import AdminSettings
from tuneplane.controlplane import mapping, projects, runs
from tuneplane.controlplane.errors import RunNotFound
from tuneplane.telemetry.v1.integration import check_document, load_document


async def run_command(args: argparse.Namespace, database_url: str) -> int:
    conn = await asyncpg.connect(database_url)
    try:
        if args.command == "run-create":
            path = Path(args.integration)
            print(await runs.create_run(conn, load_document(path), created_by="cli",
                                        now=dt.datetime.now(dt.UTC), run_id=args.run,
                                        project=args.project))
        elif args.command == "attempt-start":
            print(await runs.start_attempt(conn, args.run))
        elif args.command == "attempt-end":
            ended = await runs.end_attempt(conn, args.run, args.attempt, args.state)
            print(f"run {args.run} attempt {args.attempt}: "
                  f"{args.state if ended else 'already ' + args.state}")
        else:
            found = await runs.describe(conn, args.run)
            if found is None:
                raise RunNotFound(f"no run {args.run!r}")
            print(f"run {found['run_id']} in project {found['project']} (created by "
                  f"{found['created_by']} "
                  f"{found['created_at']:%Y-%m-%d %H:%M:%S})")
            for a in found["attempts"]:
                print(f"  attempt {a['attempt']}: {a['state']}")
    finally:
        await conn.close()
    return 0


def cmd_run(args: argparse.Namespace, settings: AdminSettings) -> int:
    return asyncio.run(run_command(args, settings.database_url.get()))


async def freeze_mapping(args: argparse.Namespace, database_url: str) -> int:
    path = Path(args.integration)
    mappings = check_document(load_document(path), str(path))
    conn = await asyncpg.connect(database_url)
    try:
        fresh = await mapping.freeze(conn, args.run, args.attempt, mappings)
    finally:
        await conn.close()
    state = "frozen" if fresh else "already frozen (the same)"
    print(f"run {args.run} attempt {args.attempt}: {len(mappings)} mappings {state}")
    return 0


def cmd_freeze(args: argparse.Namespace, settings: AdminSettings) -> int:
    return asyncio.run(freeze_mapping(args, settings.database_url.get()))


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    rc = sub.add_parser("run-create", help="create a run with its integration artifact")
    rc.add_argument("--integration", required=True, help="the artifact (YAML or JSON)")
    rc.add_argument("--run", help="run id (default: run-<time>-<random>)")
    rc.add_argument("--project", default=projects.DEFAULT,
                    help="the project it belongs to (default: default)")
    rc.set_defaults(func=cmd_run)
    st = sub.add_parser("attempt-start", help="start the run's next attempt (freezes its "
                                              "metric mapping); prints its number")
    st.add_argument("--run", required=True)
    st.set_defaults(func=cmd_run)
    en = sub.add_parser("attempt-end", help="end a running attempt")
    en.add_argument("--run", required=True)
    en.add_argument("--attempt", type=int, required=True)
    en.add_argument("--state", default="finished", choices=runs.END_STATES)
    en.set_defaults(func=cmd_run)
    sh = sub.add_parser("run-show", help="a run and its attempts")
    sh.add_argument("run")
    sh.set_defaults(func=cmd_run)
    f = sub.add_parser("freeze-mapping", help="freeze an attempt's metric mapping from its "
                                              "integration artifact (once; never changed)")
    f.add_argument("--run", required=True)
    f.add_argument("--attempt", type=int, required=True)
    f.add_argument("--integration", required=True, help="the artifact (YAML or JSON)")
    f.set_defaults(func=cmd_freeze)
