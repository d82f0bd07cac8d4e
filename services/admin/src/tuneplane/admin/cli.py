"""``tuneplane-admin``: set up storage, issue credentials and look at curves."""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import os
import sys
import time
from pathlib import Path

import asyncpg

from tuneplane.admin import curves
from tuneplane.admin.migrate import apply_migrations
from tuneplane.admin.settings import AdminSettings
from tuneplane.common import objectstore
from tuneplane.common.gateway import shared_identity, tls
from tuneplane.common.kafka import topics
from tuneplane.common.tokens import TokenSigner
from tuneplane.contract.settings import SettingsError
from tuneplane.controlplane import mapping, runs, users
from tuneplane.controlplane.errors import RunNotFound, UserExists, UserNotFound
from tuneplane.telemetry.v1.identity import MemberKey
from tuneplane.telemetry.v1.integration import check_document, load_document


def cmd_migrate(args: argparse.Namespace, settings: AdminSettings) -> None:
    applied = apply_migrations(settings.database_url.get())
    print(f"migrations applied: {', '.join(applied) or 'none (up to date)'}")


def cmd_topics(args: argparse.Namespace, settings: AdminSettings) -> None:
    created = asyncio.run(topics.ensure_topics(settings.kafka_bootstrap.get(), settings.topics))
    print(f"topics created: {', '.join(created) or 'none (all exist)'}")


def cmd_bucket(args: argparse.Namespace, settings: AdminSettings) -> None:
    bucket = settings.s3_bucket.get()
    client = objectstore.s3_client(settings.s3_endpoint.get())
    created = objectstore.ensure_bucket(client, bucket)
    print(f"bucket {bucket}: {'created' if created else 'exists'}")


def cmd_init(args: argparse.Namespace, settings: AdminSettings) -> None:
    cmd_migrate(args, settings)
    cmd_topics(args, settings)
    cmd_bucket(args, settings)


def cmd_tls_init(args: argparse.Namespace, settings: AdminSettings) -> None:
    directory = Path(args.dir)
    if all((directory / name).exists() for name in tls.TlsIdentity.FILES) and not args.force:
        print(f"TLS identity in {directory} exists (use --force to replace it)")
        return
    hosts = args.hostname or [settings.gateway_hostname]
    tls.generate([*hosts, "127.0.0.1"], now=dt.datetime.now(dt.UTC)).write(directory)
    print(f"TLS identity for {', '.join(hosts)} written to {directory} (CA: ca.pem)")


def cmd_token_workload(args: argparse.Namespace, settings: AdminSettings) -> None:
    signer = TokenSigner(settings.jwt_secret.get())
    token = signer.issue_workload(MemberKey(args.run, args.attempt, args.member),
                                  now=time.time(), ttl_seconds=args.ttl)
    if args.out:
        path = Path(args.out)
        partial = path.with_name(path.name + ".partial")
        partial.write_text(token)
        partial.chmod(0o600)
        partial.rename(path)  # collectors re-read the file; a rename is atomic
    else:
        print(token)


async def print_curves(database_url: str, run_id: str, attempt: int | None, points: bool,
                       expect: int, wait_seconds: float) -> int:
    conn = await asyncpg.connect(database_url)
    try:
        deadline = time.monotonic() + wait_seconds
        summaries = await curves.series_of_run(conn, run_id, attempt)
        while sum(s.points for s in summaries) < expect and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
            summaries = await curves.series_of_run(conn, run_id, attempt)
        if not summaries:
            print(f"run {run_id}: no curves", file=sys.stderr)
            return 1
        print(f"{'attempt':>7}  {'member':<12} {'source':<16} {'tag':<24} {'points':>8} steps")
        for s in summaries:
            print(f"{s.attempt:>7}  {s.member:<12} {s.source:<16} {s.tag:<24} {s.points:>8} "
                  f"{s.step_min}..{s.step_max}")
            if points:
                for p in await curves.points_of_series(conn, s.series_id):
                    print(f"{'':>9}step {p.step:>10}  value {p.value!r:<24} wall {p.wall_time:.3f}")
        stored = sum(s.points for s in summaries)
        if stored < expect:
            print(f"run {run_id}: {stored} of the {expect} expected points after {wait_seconds}s",
                  file=sys.stderr)
            return 1
        return 0
    finally:
        await conn.close()


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


async def print_canonical(database_url: str, run_id: str, attempt: int) -> int:
    conn = await asyncpg.connect(database_url)
    try:
        resolution = await mapping.canonical(conn, run_id, attempt)
    finally:
        await conn.close()
    for curve in resolution.curves:
        semantics = ", ".join(f"{k} {v}" for k, v in (("goal", curve.goal), ("unit", curve.unit))
                              if v) or "no goal or unit declared"
        kind = "aggregate" if curve.aggregate else "per member"
        print(f"{curve.name} ({semantics}; {kind})")
        for ref in curve.series:
            print(f"    {ref.member:<12} {ref.source}/{ref.tag}")
    for ref in resolution.unmapped:
        print(f"unmapped (unknown semantics): {ref.member:<12} {ref.source}/{ref.tag}")
    for ref in resolution.not_owner:
        print(f"ignored (aggregate not from its owner): {ref.member:<12} {ref.source}/{ref.tag}")
    return 0


async def user_command(args: argparse.Namespace, settings: AdminSettings) -> int:
    signer = TokenSigner(settings.jwt_secret.get())
    conn = await asyncpg.connect(settings.database_url.get())
    try:
        if args.command == "bootstrap-admin":
            if not await users.bootstrap_admin(conn, args.user):
                raise UserExists("an admin exists already; issue tokens with user-token")
        elif args.command == "user-add":
            await users.add_user(conn, args.user, admin=args.admin)
        elif not await users.exists(conn, args.user):
            raise UserNotFound(f"no user {args.user!r}; add it with user-add")
    finally:
        await conn.close()
    print(users.issue(signer, args.user, now=time.time(), ttl_seconds=args.ttl))
    return 0


def cmd_user(args: argparse.Namespace, settings: AdminSettings) -> int:
    return asyncio.run(user_command(args, settings))


async def gateway_ca_pem(database_url: str) -> str | None:
    conn = await asyncpg.connect(database_url)
    try:
        return await shared_identity.trust_bundle(conn)
    finally:
        await conn.close()


def cmd_gateway_ca(args: argparse.Namespace, settings: AdminSettings) -> int:
    bundle = asyncio.run(gateway_ca_pem(settings.database_url.get()))
    if bundle is None:
        print("no gateway identity yet: it is created when ingest or control first starts",
              file=sys.stderr)
        return 1
    if args.out:
        Path(args.out).write_text(bundle)
    else:
        print(bundle, end="")
    return 0


async def run_command(args: argparse.Namespace, database_url: str) -> int:
    conn = await asyncpg.connect(database_url)
    try:
        if args.command == "run-create":
            path = Path(args.integration)
            print(await runs.create_run(conn, load_document(path), created_by="cli",
                                        now=dt.datetime.now(dt.UTC), run_id=args.run))
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
            print(f"run {found['run_id']} (created by {found['created_by']} "
                  f"{found['created_at']:%Y-%m-%d %H:%M:%S})")
            for a in found["attempts"]:
                print(f"  attempt {a['attempt']}: {a['state']}")
    finally:
        await conn.close()
    return 0


def cmd_run(args: argparse.Namespace, settings: AdminSettings) -> int:
    return asyncio.run(run_command(args, settings.database_url.get()))


def cmd_freeze(args: argparse.Namespace, settings: AdminSettings) -> int:
    return asyncio.run(freeze_mapping(args, settings.database_url.get()))


def cmd_curves(args: argparse.Namespace, settings: AdminSettings) -> int:
    if args.canonical:
        if args.attempt is None:
            raise ValueError("--canonical needs --attempt")
        return asyncio.run(print_canonical(settings.database_url.get(), args.run, args.attempt))
    return asyncio.run(print_curves(settings.database_url.get(), args.run, args.attempt,
                                    args.points, args.expect, args.timeout))


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tuneplane-admin", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("init", help="apply migrations, create topics and the bucket (idempotent)")\
        .set_defaults(func=cmd_init)
    sub.add_parser("migrate", help="apply PostgreSQL migrations (safe from many replicas)")\
        .set_defaults(func=cmd_migrate)
    sub.add_parser("topics", help="create the Kafka topics with explicit settings")\
        .set_defaults(func=cmd_topics)
    sub.add_parser("bucket", help="create the S3 bucket").set_defaults(func=cmd_bucket)
    t = sub.add_parser("tls-init", help="generate a private CA and server certificate")
    t.add_argument("--dir", required=True, help="directory for ca.pem, server.pem, server.key")
    t.add_argument("--hostname", action="append",
                   help="name the certificate covers (repeatable; default "
                        "TUNEPLANE_GATEWAY_HOSTNAME or localhost)")
    t.add_argument("--force", action="store_true", help="replace an existing identity")
    t.set_defaults(func=cmd_tls_init)
    w = sub.add_parser("token", help="issue a workload token bound to run/attempt/member")
    w.add_argument("--run", required=True)
    w.add_argument("--attempt", type=int, required=True)
    w.add_argument("--member", required=True)
    w.add_argument("--ttl", type=int, default=3600, help="lifetime in seconds (default 3600)")
    w.add_argument("--out", help="write to this file atomically instead of printing")
    w.set_defaults(func=cmd_token_workload)
    g = sub.add_parser("gateway-ca", help="print the CA of the shared gateway identity: the "
                                          "trust bundle collectors are handed")
    g.add_argument("--out", help="write it to this file")
    g.set_defaults(func=cmd_gateway_ca)
    rc = sub.add_parser("run-create", help="create a run with its integration artifact")
    rc.add_argument("--integration", required=True, help="the artifact (YAML or JSON)")
    rc.add_argument("--run", help="run id (default: run-<time>-<random>)")
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
    for name, text in (("bootstrap-admin", "create the first admin of a fresh install and "
                                            "print a user token for it"),
                       ("user-add", "add a web user and print a user token"),
                       ("user-token", "print a new user token for an existing user")):
        u = sub.add_parser(name, help=text)
        u.add_argument("--user", default="admin" if name == "bootstrap-admin" else None,
                       required=name != "bootstrap-admin")
        if name == "user-add":
            u.add_argument("--admin", action="store_true")
        u.add_argument("--ttl", type=int, default=30 * 86400,
                       help="token lifetime in seconds (default 30 days)")
        u.set_defaults(func=cmd_user)
    c = sub.add_parser("curves", help="print a run's curves from PostgreSQL")
    c.add_argument("run")
    c.add_argument("--attempt", type=int)
    c.add_argument("--points", action="store_true", help="print every point too")
    c.add_argument("--canonical", action="store_true",
                   help="canonical curves through the attempt's frozen mapping")
    c.add_argument("--expect", type=int, default=0,
                   help="wait until the run has at least this many points")
    c.add_argument("--timeout", type=float, default=60.0,
                   help="seconds to wait for --expect (default 60)")
    c.set_defaults(func=cmd_curves)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        result = args.func(args, AdminSettings.from_environ(os.environ))
    except (SettingsError, ValueError, OSError) as exc:  # IntegrationError, MappingFrozen too
        print(f"tuneplane-admin {args.command}: {exc}", file=sys.stderr)
        return 2
    return int(result or 0)


if __name__ == "__main__":
    sys.exit(main())
