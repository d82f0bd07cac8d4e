"""``tuneplane-admin`` projects and who may do what in them: create a project, grant or
revoke a user's role in it, list its members, say how long it keeps its runs and apply
that (``retention``, from a schedule); set a user's password; disable a user (its tokens
and sessions are refused from that moment)."""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import getpass
import json
import sys

import asyncpg

from tuneplane.admin.settings import AdminSettings
from tuneplane.common import schedule
from tuneplane.contract.settings import SettingsError
from tuneplane.controlplane import passwords, projects, retention, users
from tuneplane.controlplane.projects import Role


async def project_command(args: argparse.Namespace, database_url: str) -> int:
    conn = await asyncpg.connect(database_url)
    try:
        if args.command == "project-create":
            await projects.create(conn, args.project, owner=args.owner)
            print(f"project {args.project} created"
                  + (f", owned by {args.owner}" if args.owner else ""))
        elif args.command == "project-grant":
            await projects.grant(conn, args.project, args.user, Role.named(args.role))
            print(f"{args.user} is a {args.role} of project {args.project}")
        elif args.command == "project-revoke":
            held = await projects.revoke(conn, args.project, args.user)
            print(f"{args.user} holds no role in project {args.project}"
                  + ("" if held else " (held none)"))
        elif args.command == "project-members":
            for member in await projects.members(conn, args.project):
                print(f"{member.username}\t{member.role.label}")
        elif args.command == "project-retention":
            await project_retention(conn, args)
        elif args.command == "retention":
            now = dt.datetime.fromisoformat(args.now) if args.now else dt.datetime.now(dt.UTC)
            done = await retention.apply(conn, now if now.tzinfo else now.replace(
                tzinfo=dt.UTC), undo_seconds=args.undo_seconds)
            print(json.dumps({"runs_deleted": done.runs, "by_project": done.deleted,
                              "rich_expired": done.rich_expired}))
        elif args.command == "user-password":
            await passwords.set_password(conn, args.user, read_password(args))
            print(f"user {args.user} signs in with its new password")
        else:
            changed = await users.disable(conn, args.user)
            print(f"user {args.user} " + ("disabled: its tokens are refused from now on"
                                          if changed else "was disabled already"))
    finally:
        await conn.close()
    return 0


async def project_retention(conn: asyncpg.Connection, args: argparse.Namespace) -> None:
    said = {"keep_runs_days", "keep_rich_days"} & set(vars(args))
    if not said:
        raise ValueError("say how long the project keeps its runs (--keep-runs-days N or "
                         "--keep-forever), its rich records (--keep-rich-days M or "
                         "--keep-rich-with-runs), or both")
    async with conn.transaction():
        if "keep_runs_days" in said:
            await retention.keep_runs(conn, args.project, args.keep_runs_days)
        if "keep_rich_days" in said:
            await retention.keep_rich(conn, args.project, args.keep_rich_days)
    row = await conn.fetchrow("SELECT keep_runs_days, keep_rich_days FROM projects WHERE "
                              "project = $1", args.project)
    assert row is not None
    runs_days, rich_days = row["keep_runs_days"], row["keep_rich_days"]
    print(f"project {args.project} keeps its runs "
          + (f"{runs_days} days after they end" if runs_days else "until they are deleted")
          + (f", their rich records {rich_days} days" if rich_days else ""))


def read_password(args: argparse.Namespace) -> str:
    if args.password_stdin:
        return sys.stdin.readline().rstrip("\n")
    first = getpass.getpass(f"new password of {args.user}: ")
    if getpass.getpass("again: ") != first:
        raise ValueError("the two passwords differ")
    return first


def cmd_project(args: argparse.Namespace, settings: AdminSettings) -> int:
    url = settings.database_url.get()
    if args.command == "retention":  # from a schedule, or --every
        return asyncio.run(schedule.repeat(args, lambda: project_command(args, url),
                                           fatal=(SettingsError,)))
    return asyncio.run(project_command(args, url))


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    c = sub.add_parser("project-create", help="create a project (runs belong to one)")
    c.add_argument("project")
    c.add_argument("--owner", help="a user to own it (admins own every project anyway)")
    g = sub.add_parser("project-grant", help="give a user a role in a project (viewer reads, "
                                             "editor also runs and launches, owner also "
                                             "manages members)")
    g.add_argument("project")
    g.add_argument("user")
    g.add_argument("role", choices=[r.label for r in Role])
    r = sub.add_parser("project-revoke", help="take a user's role in a project away")
    r.add_argument("project")
    r.add_argument("user")
    m = sub.add_parser("project-members", help="who holds which role in a project")
    m.add_argument("project")
    k = sub.add_parser("project-retention", help="how long a project keeps its runs, and "
                                                 "their rich records, after they end (then "
                                                 "`retention` deletes or expires them)")
    k.add_argument("project")
    kept = k.add_mutually_exclusive_group()
    kept.add_argument("--keep-runs-days", type=int, default=argparse.SUPPRESS,
                      help="days after a run ends")
    kept.add_argument("--keep-forever", action="store_const", dest="keep_runs_days",
                      const=None, default=argparse.SUPPRESS,
                      help="until deleted (the default)")
    rich = k.add_mutually_exclusive_group()
    rich.add_argument("--keep-rich-days", type=int, default=argparse.SUPPRESS,
                      help="days after a run ends that its rich records (images, audio, "
                           "histograms, text) are kept; its curves stay as long as the run")
    rich.add_argument("--keep-rich-with-runs", action="store_const", dest="keep_rich_days",
                      const=None, default=argparse.SUPPRESS,
                      help="rich records as long as their run (the default)")
    a = sub.add_parser("retention", help="delete the runs their projects' retention says are "
                                         "due (safe on several replicas; run it from a "
                                         "schedule, then `tuneplane-projector purge`)")
    a.add_argument("--undo-seconds", type=float, default=86400,
                   help="the deletions' undo window (default 86400, as the web's)")
    a.add_argument("--now", help="judge as of this time (ISO 8601, UTC unless said)")
    schedule.add_arguments(a)
    d = sub.add_parser("user-disable", help="disable a user: its tokens are refused at once")
    d.add_argument("user")
    pw = sub.add_parser("user-password", help="set a user's password, for signing in at "
                                              "/login (local users, small installs)")
    pw.add_argument("--user", required=True)
    pw.add_argument("--password-stdin", action="store_true",
                    help="read it from the first line of standard input (default: prompt)")
    for each in (c, g, r, m, k, a, d, pw):
        each.set_defaults(func=cmd_project)
