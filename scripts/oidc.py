"""A local OpenID Connect provider for sign-in tests: Dex, built from its Go module.

Standard library only, like scripts/services, whose conventions and helpers (scripts/stack,
scripts/lib) it shares: the port is picked free and kept in ``.services/ports.json``, the
state lives in ``.services/oidc/``, the build is cached under ``~/.cache/tuneplane/dex/``
and the settings are printed as ``export`` lines and written to ``.services/oidc.env``.

Dex serves plain http on 127.0.0.1: a test provider on loopback, never a deployment's. It
has one confidential client, ``tuneplane-web``, and two users whose ID tokens carry groups
(scope ``groups``): alice@example.com in vision-editors, bob@example.com in vision-viewers.
The client secret and the passwords are random, made at the first ``up`` and kept.

Dex compares redirect URIs exactly. They come from ``--redirect-uri`` (repeatable), else
from ``TUNEPLANE_OIDC_REDIRECT_URI`` (comma-separated), else one on a port reserved for the
web service: ``http://127.0.0.1:<oidc_callback port>/auth/callback``. An ``up`` with other
redirect URIs restarts Dex with them (its state is in memory: about a second).

    scripts/oidc up [--redirect-uri URI]...   build if needed, start, wait for discovery,
                                              print settings
    scripts/oidc build                        build Dex if needed (cached), print its folder
    scripts/oidc down [--wipe]                stop (``--wipe`` also forgets secret and passwords)
    scripts/oidc status                       one line
    scripts/oidc env                          print the running provider's settings
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
import urllib.request
from pathlib import Path

from scripts.lib.exports import publish
from scripts.lib.ports import port_open
from scripts.lib.processes import ProcessError, status_line, wait_until
from scripts.stack import dex
from scripts.stack.common import (
    DATA,
    ServiceError,
    logfile,
    pid_of,
    pidfile,
    ports,
    spawn,
    stop_process,
)
from scripts.stack.dex import CLIENT_ID, DEX_VERSION, STATE, USERS, Credentials, log

PORT_NAMES = ("oidc", "oidc_callback")


def issuer() -> str:
    return dex.issuer(ports(PORT_NAMES)["oidc"])


def redirect_uris(given: list[str]) -> list[str]:
    if given:
        return given
    from_env = [u.strip() for u in os.environ.get("TUNEPLANE_OIDC_REDIRECT_URI", "").split(",")]
    if any(from_env):
        return [u for u in from_env if u]
    return [f"http://127.0.0.1:{ports(PORT_NAMES)['oidc_callback']}/auth/callback"]


def settings(config: dict[str, object], creds: Credentials) -> dict[str, str]:
    clients = config["staticClients"]
    assert isinstance(clients, list)
    values = {
        "TUNEPLANE_OIDC_ISSUER": str(config["issuer"]),
        "TUNEPLANE_OIDC_CLIENT_ID": CLIENT_ID,
        "TUNEPLANE_OIDC_CLIENT_SECRET": creds.client_secret,
        "TUNEPLANE_OIDC_REDIRECT_URI": ",".join(clients[0]["redirectURIs"]),
    }
    for user in USERS:
        values[user.password_variable] = creds.passwords[user.name]
    return values


def discovery_answers(issuer_url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{issuer_url}/.well-known/openid-configuration",
                                    timeout=1) as response:
            document = json.loads(response.read())
    except (OSError, ValueError):
        return False
    return isinstance(document, dict) and document.get("issuer") == issuer_url


def running() -> bool:
    return pid_of("oidc") is not None and port_open(ports(PORT_NAMES)["oidc"])


def running_binary() -> Path | None:
    pid = pid_of("oidc")
    try:
        return Path(os.readlink(f"/proc/{pid}/exe")) if pid is not None else None
    except OSError:
        return None


def start(config_path: Path, issuer_url: str) -> None:
    logfile("oidc").unlink(missing_ok=True)
    # Env expansion off: a bcrypt hash is full of '$'.
    spawn("oidc", [str(dex.binaries() / "dex"), "serve", str(config_path)],
          env={"DEX_EXPAND_ENV": "false"})
    wait_until("oidc", lambda: discovery_answers(issuer_url), seconds=30, log=logfile("oidc"),
               process=pidfile("oidc"))


def print_env(values: dict[str, str]) -> None:
    publish(values, DATA / "oidc.env")


def up(given_uris: list[str]) -> None:
    bindir = dex.binaries()
    creds = dex.credentials(bindir)
    config = dex.config(ports(PORT_NAMES)["oidc"], redirect_uris(given_uris), creds)
    config_path = STATE / "config.json"
    wanted = json.dumps(config, indent=1) + "\n"
    current = config_path.read_text() if config_path.exists() else None
    issuer_url = str(config["issuer"])
    if running() and current == wanted and running_binary() == bindir / "dex":
        log(f"already running at {issuer_url}")
    else:
        if running():
            log("restarting with a changed configuration or build")
            stop_process("oidc")
        config_path.touch(mode=0o600)  # it holds the client secret
        config_path.write_text(wanted)
        started = time.monotonic()
        start(config_path, issuer_url)
        log(f"Dex {DEX_VERSION} serving {issuer_url} ({time.monotonic() - started:.1f}s)")
    print_env(settings(config, creds))


def down(wipe: bool) -> None:
    stop_process("oidc")
    log("stopped")
    if wipe:
        shutil.rmtree(STATE, ignore_errors=True)
        (DATA / "oidc.env").unlink(missing_ok=True)
        log(f"removed {STATE}")


def main() -> int:
    parser = argparse.ArgumentParser(prog="scripts/oidc", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    up_parser = sub.add_parser("up")
    up_parser.add_argument("--redirect-uri", action="append", default=[], metavar="URI",
                           help="a redirect URI of the tuneplane-web client (repeatable)")
    sub.add_parser("down").add_argument("--wipe", action="store_true",
                                        help="also forget the client secret and passwords")
    sub.add_parser("build")
    sub.add_parser("status")
    sub.add_parser("env")
    args = parser.parse_args()
    try:
        if args.command == "up":
            up(args.redirect_uri)
        elif args.command == "build":
            print(dex.binaries())
        elif args.command == "down":
            down(args.wipe)
        elif args.command == "status":
            print(status_line("oidc", running(), issuer(), f"Dex {DEX_VERSION}"))
        else:
            config_path = STATE / "config.json"
            if not running() or not config_path.exists():
                raise ServiceError("not running; start it with scripts/oidc up")
            print_env(settings(json.loads(config_path.read_text()), Credentials.read()))
    except ProcessError as exc:
        log(f"error: {exc}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
