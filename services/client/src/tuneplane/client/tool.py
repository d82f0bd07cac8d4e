"""``tuneplane``: the user's command line for the control plane, over the web API.

    tuneplane destinations apply -f FILE [-f FILE ...]   create or change (YAML or JSON)
    tuneplane destinations get NAME | list | delete NAME
    tuneplane destinations render [-f FILE ...]          the composed collector config
    tuneplane runs delete RUN [--attempt N] [--confirm NAME]   delete (an owner's)
    tuneplane runs undelete RUN [--attempt N]            take a deletion back in its window

Talks to ``--url`` (TUNEPLANE_URL, default http://127.0.0.1:8080) with the user token in
``--token`` (TUNEPLANE_TOKEN; `tuneplane-admin user-token` prints one); destinations are
read and changed by admins only, and the server shows their secret values redacted.
``render -f`` checks and composes the given files offline, without a server (nothing
redacted). Ships in ``tuneplane-client``, with the Python client it calls through.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any
from urllib.parse import quote

import yaml

from tuneplane.client.client import Client, ClientError, Defaults
from tuneplane.destinations.compose import dumps, render
from tuneplane.destinations.resource import DestinationError, parse

#: Where ``tuneplane`` looks without ``--url`` or ``TUNEPLANE_URL``: a web service started
#: on this host (``tuneplane-web``, compose).
LOCAL = "http://127.0.0.1:8080"


class ToolError(Exception):
    """What went wrong, said for the user."""


def documents(path: Path) -> list[Any]:
    try:
        text = sys.stdin.read() if str(path) == "-" else path.read_text()
        found = [d for d in yaml.safe_load_all(text) if d is not None]
    except (OSError, yaml.YAMLError) as exc:
        raise ToolError(f"{path}: {exc}") from None
    if not found:
        raise ToolError(f"{path}: no document in it")
    return found


def call(args: argparse.Namespace, method: str, path: str, body: Any = None) -> Any:
    if not args.token:
        raise ToolError("give --token or set TUNEPLANE_TOKEN (a user token)")
    with Client(args.url, args.token, timeout=30) as client:
        response = client.call(method, path, json=body)
    return response.json() if response.content else None


def destinations(args: argparse.Namespace) -> None:
    if args.action == "apply":
        for path in args.file:
            for document in documents(path):
                name = document.get("metadata", {}).get("name") if isinstance(
                    document, dict) and isinstance(document.get("metadata"), dict) else None
                if not name:
                    raise ToolError(f"{path}: metadata.name is missing")
                done = call(args, "PUT", f"/destinations/{name}", document)
                print(f"destination/{done['name']} {done['result']} "
                      f"(generation {done['generation']})")
    elif args.action == "get":
        print(yaml.safe_dump(call(args, "GET", f"/destinations/{args.name}"), sort_keys=False),
              end="")
    elif args.action == "list":
        for document in call(args, "GET", "/destinations"):
            sinks = ", ".join(f"{s['exporter']}/{s['name']}" for s in document["spec"]["sinks"])
            print(f"{document['metadata']['name']}\tgeneration "
                  f"{document['metadata'].get('generation')}\t{sinks}")
    elif args.action == "delete":
        call(args, "DELETE", f"/destinations/{args.name}")
        print(f"destination/{args.name} deleted")
    else:
        if args.file:
            parsed = [parse(d, str(p)) for p in args.file for d in documents(p)]
            config = render(parsed)
        else:
            config = call(args, "GET", "/telemetry-collector/config")["config"]
        if config is None:
            print("no destination: nothing is composed and export is off", file=sys.stderr)
            return
        print(dumps(config), end="")


def runs(args: argparse.Namespace) -> None:
    """Delete a run or attempt (after naming it again), or take a deletion back."""
    named = args.run if args.attempt is None else f"{args.run}/{args.attempt}"
    path = f"/runs/{quote(args.run, safe='')}" + (
        "" if args.attempt is None else f"/attempts/{args.attempt}")
    if args.action == "undelete":
        call(args, "DELETE", f"{path}/deletion")
        print(f"{named}: deletion taken back")
        return
    confirm = args.confirm
    if confirm is None:
        if not sys.stdin.isatty():
            raise ToolError(f"give --confirm {named} (no terminal to ask on)")
        confirm = input(f"Deleting {named} hides it now and removes its data after the undo "
                        f"window. Type {named} to confirm: ").strip()
    if confirm != named:
        raise ToolError(f"not confirmed: {confirm!r} is not {named!r}; nothing deleted")
    done = call(args, "POST", f"{path}/deletion", {"confirm": confirm})
    print(f"{named}: deleted; its data is removed after {done['purge_after']} "
          f"(`tuneplane runs undelete {args.run}"
          + ("" if args.attempt is None else f" --attempt {args.attempt}") + "` until then)")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tuneplane", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--url",
                   help="the web service (default TUNEPLANE_URL or http://127.0.0.1:8080)")
    p.add_argument("--token", help="user token (default TUNEPLANE_TOKEN)")
    sub = p.add_subparsers(dest="resource", required=True)
    d = sub.add_parser("destinations", help="TelemetryDestinations: where telemetry goes")
    actions = d.add_subparsers(dest="action", required=True)
    apply = actions.add_parser("apply", help="create or change destinations from files")
    apply.add_argument("-f", "--file", type=Path, action="append", required=True,
                       help="YAML or JSON, several documents separated by ---; - for stdin")
    for name, text in (("get", "one destination as stored"), ("delete", "remove one")):
        one = actions.add_parser(name, help=text)
        one.add_argument("name")
    actions.add_parser("list", help="every destination, its generation and sinks")
    r = actions.add_parser("render", help="print the composed OpenTelemetry Collector config")
    r.add_argument("-f", "--file", type=Path, action="append", default=[],
                   help="compose these files offline instead of the server's destinations")
    d.set_defaults(func=destinations)
    u = sub.add_parser("runs", help="runs: delete one, or take its deletion back")
    run_actions = u.add_subparsers(dest="action", required=True)
    for name, text in (("delete", "delete a run (or --attempt N): hidden at once, its data "
                                  "removed after the undo window; owners of its project"),
                       ("undelete", "take a deletion back before its data is removed")):
        one = run_actions.add_parser(name, help=text)
        one.add_argument("run")
        one.add_argument("--attempt", type=int, help="only this attempt")
        if name == "delete":
            one.add_argument("--confirm", metavar="NAME",
                             help="the run (RUN/N for an attempt) again, instead of typing "
                                  "it when asked")
    u.set_defaults(func=runs)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        given = Defaults.from_environ(os.environ)
        args.url = args.url or given.url or LOCAL
        args.token = args.token or given.token
        args.func(args)
    except (ToolError, ClientError, DestinationError) as exc:
        print(f"tuneplane {args.resource} {args.action}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
