"""``tuneplane-admin`` credentials: development TLS, workload, delivery and user tokens, the
gateway's trust bundle."""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import os
import sys
import time
from pathlib import Path
from urllib.parse import urlencode

import asyncpg

from tuneplane.admin.settings import AdminSettings
from tuneplane.common.gateway import shared_identity, tls
from tuneplane.common.tokens import MAX_DELIVERY_SECONDS, TokenSigner
from tuneplane.controlplane import api_tokens, sign_in_links, users
from tuneplane.controlplane.errors import UserExists, UserNotFound
from tuneplane.telemetry.v1.delivery import committed_tree
from tuneplane.telemetry.v1.identity import MemberKey


def cmd_tls_init(args: argparse.Namespace, settings: AdminSettings) -> None:
    directory = Path(args.dir)
    if all((directory / name).exists() for name in tls.TlsIdentity.FILES) and not args.force:
        print(f"TLS identity in {directory} exists (use --force to replace it)")
        return
    hosts = args.hostname or [settings.gateway_hostname]
    tls.generate([*hosts, "127.0.0.1"], now=dt.datetime.now(dt.UTC)).write(directory)
    print(f"TLS identity for {', '.join(hosts)} written to {directory} (CA: ca.pem)")


def written(token: str, out: str | None) -> None:
    """``token`` printed, or written to ``out`` (private, atomically)."""
    if out:
        path = Path(out)
        partial = path.with_name(path.name + ".partial")
        partial.unlink(missing_ok=True)
        with os.fdopen(os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as f:
            f.write(token)  # private from its first byte
        partial.rename(path)  # collectors re-read the file; a rename is atomic
    else:
        print(token)


def cmd_token_workload(args: argparse.Namespace, settings: AdminSettings) -> None:
    signer = TokenSigner(settings.jwt_secret.get())
    written(signer.issue_workload(MemberKey(args.run, args.attempt, args.member),
                                  now=time.time(), ttl_seconds=args.ttl), args.out)


def cmd_token_delivery(args: argparse.Namespace, settings: AdminSettings) -> None:
    """A deliver-only credential: what ``tuneplane-collector deliver SPOOL`` printed."""
    epoch, root = committed_tree(args.epoch, args.root, args.batches)
    signer = TokenSigner(settings.jwt_secret.get())
    member = MemberKey(args.run, args.attempt, args.member)
    now = time.time()
    written(signer.issue_delivery(member, epoch, root, args.batches, now=now,
                                  ttl_seconds=args.ttl), args.out)
    until = dt.datetime.fromtimestamp(now + args.ttl, dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    print(f"deliver-only credential for {args.batches} batches of {member} (spool epoch "
          f"{epoch}), until {until}", file=sys.stderr)


async def user_command(args: argparse.Namespace, settings: AdminSettings) -> int:
    signer = TokenSigner(settings.jwt_secret.get())
    conn = await asyncpg.connect(settings.database_url.get())
    try:
        if args.command == "bootstrap-admin":
            if not await users.bootstrap_admin(conn, args.user):
                raise UserExists("an admin exists already; issue tokens with user-token")
        elif args.command == "user-add":
            await users.add_user(conn, args.user, admin=args.admin)
        else:
            found = await users.active(conn, args.user)
            if found is None:
                raise UserNotFound(f"no user {args.user!r}; add it with user-add")
            if found[1]:
                raise UserNotFound(f"user {args.user!r} is disabled; its tokens are refused")
        _, token, _ = await api_tokens.issue(
            conn, signer, args.user, name=args.name or f"tuneplane-admin {args.command}",
            now=dt.datetime.now(dt.UTC), days=args.days, projects=args.project or None)
    finally:
        await conn.close()
    print(token)
    return 0


def cmd_user(args: argparse.Namespace, settings: AdminSettings) -> int:
    return asyncio.run(user_command(args, settings))


async def sign_in_link(args: argparse.Namespace, settings: AdminSettings) -> str:
    conn = await asyncpg.connect(settings.database_url.get())
    try:
        secret = await sign_in_links.issue(conn, args.user, args.next,
                                           now=dt.datetime.now(dt.UTC), minutes=args.minutes)
    finally:
        await conn.close()
    query = urlencode({sign_in_links.PARAMETER: secret})
    return f"{args.url.rstrip('/')}/auth/link?{query}"


def cmd_sign_in_link(args: argparse.Namespace, settings: AdminSettings) -> int:
    if not args.url.startswith(("http://", "https://")):
        raise ValueError(f"--url is the web service's address (http[s]://host:port), "
                         f"not {args.url!r}")
    print(asyncio.run(sign_in_link(args, settings)))
    return 0


async def gateway_ca_pem(database_url: str) -> str | None:
    conn = await asyncpg.connect(database_url)
    try:
        return await shared_identity.trust_bundle(conn)
    finally:
        await conn.close()


def cmd_gateway_ca(args: argparse.Namespace, settings: AdminSettings) -> int:
    """The trust bundle collectors are handed: the externally managed certificate's
    (``TUNEPLANE_TELEMETRY_TRUST_BUNDLE``) where one is set, else the shared identity's CA."""
    bundle: str | None
    if settings.trust_bundle is not None:
        try:
            bundle = settings.trust_bundle.read_text()
        except OSError as exc:
            print(f"TUNEPLANE_TELEMETRY_TRUST_BUNDLE {settings.trust_bundle}: cannot be read "
                  f"({exc.strerror})", file=sys.stderr)
            return 1
    else:
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


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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
    d = sub.add_parser("delivery-token", help="issue a deliver-only credential for the batches "
                                              "a spool holds after its collector stopped, as "
                                              "`tuneplane-collector deliver SPOOL` printed them",
                       description="Issue a deliver-only credential: it admits exactly the "
                                   "sealed batches of one spool (named by its epoch and the "
                                   "root of their Merkle tree, which `tuneplane-collector "
                                   "deliver SPOOL` prints with this command to run), even "
                                   "after the attempt ended, and no other data. Take the "
                                   "values from what `deliver` printed on the spool's host "
                                   "(never from a tenant: the credential admits whatever "
                                   "tree it names, for that member).")
    d.add_argument("--run", required=True)
    d.add_argument("--attempt", type=int, required=True)
    d.add_argument("--member", required=True)
    d.add_argument("--epoch", required=True, help="the spool's epoch")
    d.add_argument("--batches", type=int, required=True,
                   help="how many batches the tree covers")
    d.add_argument("--root", required=True, help="the tree's root (64 hex digits)")
    d.add_argument("--ttl", type=int, default=86400,
                   help=f"lifetime in seconds (default 86400: a day; at most "
                        f"{MAX_DELIVERY_SECONDS})")
    d.add_argument("--out", help="write to this file (mode 0600) instead of printing")
    d.set_defaults(func=cmd_token_delivery)
    g = sub.add_parser("gateway-ca", help="print the trust bundle collectors are handed: "
                                          "TUNEPLANE_TELEMETRY_TRUST_BUNDLE with an externally "
                                          "managed certificate, else the shared gateway "
                                          "identity's CA")
    g.add_argument("--out", help="write it to this file")
    g.set_defaults(func=cmd_gateway_ca)
    s = sub.add_parser("sign-in-link", help="print a one-time link that signs a browser in as "
                                             "a user (no password needed; used once, within "
                                             "minutes)")
    s.add_argument("--user", required=True)
    s.add_argument("--url", default="http://127.0.0.1:8080",
                   help="the web service's address (default http://127.0.0.1:8080)")
    s.add_argument("--next", default="/", metavar="PATH",
                   help="the page it leads to once signed in (default /, the runs list)")
    s.add_argument("--minutes", type=int, default=sign_in_links.DEFAULT_MINUTES,
                   help=f"how long it may wait to be used (default "
                        f"{sign_in_links.DEFAULT_MINUTES}, at most {sign_in_links.MAX_MINUTES})")
    s.set_defaults(func=cmd_sign_in_link)
    for name, text in (("bootstrap-admin", "create the first admin of a fresh install and "
                                            "print a user token for it"),
                       ("user-add", "add a web user and print a user token"),
                       ("user-token", "print a new user token for an existing user")):
        u = sub.add_parser(name, help=text)
        u.add_argument("--user", default="admin" if name == "bootstrap-admin" else None,
                       required=name != "bootstrap-admin")
        if name == "user-add":
            u.add_argument("--admin", action="store_true")
        u.add_argument("--days", type=int, default=api_tokens.DEFAULT_DAYS,
                       help=f"token lifetime in days (default {api_tokens.DEFAULT_DAYS}, at "
                            f"most {api_tokens.MAX_DAYS}); listed and revocable in the web "
                            "API (/api/v1/tokens)")
        u.add_argument("--name", help="what the token is for (shown in its listing)")
        u.add_argument("--project", action="append", metavar="PROJECT",
                       help="scope the token to this project (repeatable; default: all of "
                            "the user's, and admin rights)")
        u.set_defaults(func=cmd_user)
