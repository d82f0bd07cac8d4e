"""A local OpenID Connect provider for sign-in tests: Dex, built from its Go module.

Standard library only, like scripts/services, whose conventions (and helpers) it shares: the
port is picked free and kept in ``.services/ports.json``, the state lives in
``.services/oidc/``, the build is cached under ``~/.cache/tuneplane/dex/`` and the settings
are printed as ``export`` lines and written to ``.services/oidc.env``.

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
import hashlib
import json
import os
import secrets
import shlex
import shutil
import subprocess
import sys
import time
import urllib.request
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path

from scripts.services import (
    CACHE,
    DATA,
    ROOT,
    ServiceError,
    pid_of,
    port_open,
    ports,
    run,
    spawn,
    stop_pid,
    wait_until,
)

#: Dex v2.45.1 (the first release whose static users carry groups is v2.45.0), pinned by
#: scripts/dex/go.mod as the pseudo-version the module proxy serves it by.
DEX_VERSION = "v2.45.1"
BUILD_MODULE = ROOT / "scripts" / "dex"
GO_BUILD = ("go", "build", "-mod=readonly", "-trimpath", "-buildvcs=false",
            f"-ldflags=-s -w -X main.version={DEX_VERSION}")
PORT_NAMES = ("oidc", "oidc_callback")
STATE = DATA / "oidc"
CLIENT_ID = "tuneplane-web"


@dataclass(frozen=True, slots=True)
class StaticUser:
    name: str
    email: str
    groups: tuple[str, ...]

    @property
    def password_variable(self) -> str:
        return f"TUNEPLANE_OIDC_{self.name.upper()}_PASSWORD"


USERS = (
    StaticUser("alice", "alice@example.com", ("vision-editors",)),
    StaticUser("bob", "bob@example.com", ("vision-viewers",)),
)


def log(message: str) -> None:
    print(f"oidc: {message}", file=sys.stderr, flush=True)


def build_dir() -> Path:
    digest = hashlib.sha256(" ".join(GO_BUILD).encode())
    for name in ("go.mod", "go.sum", "hashpassword/main.go"):
        digest.update((BUILD_MODULE / name).read_bytes())
    return CACHE / "dex" / f"{DEX_VERSION}-{digest.hexdigest()[:12]}"


def binaries() -> Path:
    """The folder with ``dex`` and ``hashpassword``, built once from scripts/dex."""
    target = build_dir()
    if (target / "dex").exists() and (target / "hashpassword").exists():
        return target
    if shutil.which("go") is None:
        raise ServiceError("Go is needed to build Dex")
    log(f"building Dex {DEX_VERSION} into {target} (a minute or two the first time)")
    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    # Without cgo Dex has no SQLite storage, which a provider with memory storage never needs.
    run("oidc", [*GO_BUILD, "-o", f"{partial}/", "github.com/dexidp/dex/cmd/dex",
                 "./hashpassword"], cwd=BUILD_MODULE, env={**os.environ, "CGO_ENABLED": "0"})
    shutil.rmtree(target, ignore_errors=True)
    partial.rename(target)
    return target


@dataclass(frozen=True, slots=True)
class Credentials:
    """The client secret, and the users' passwords and their bcrypt hashes, by user name."""

    client_secret: str
    passwords: dict[str, str]
    hashes: dict[str, str]

    @classmethod
    def read(cls) -> Credentials:
        return cls(**json.loads((STATE / "credentials.json").read_text()))


def credentials(bindir: Path) -> Credentials:
    """Made at the first ``up`` and kept in ``.services/oidc/credentials.json``."""
    path = STATE / "credentials.json"
    if path.exists():
        return Credentials.read()
    passwords = {user.name: secrets.token_urlsafe(18) for user in USERS}
    hashed = subprocess.run([str(bindir / "hashpassword")], check=True, capture_output=True,
                            text=True, input="".join(f"{p}\n" for p in passwords.values()))
    made = Credentials(secrets.token_urlsafe(32), passwords,
                       dict(zip(passwords, hashed.stdout.split(), strict=True)))
    STATE.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    partial.touch(mode=0o600)
    partial.write_text(json.dumps(asdict(made), indent=1) + "\n")
    partial.rename(path)
    return made


def issuer() -> str:
    return f"http://127.0.0.1:{ports(PORT_NAMES)['oidc']}/dex"


def redirect_uris(given: list[str]) -> list[str]:
    if given:
        return given
    from_env = [u.strip() for u in os.environ.get("TUNEPLANE_OIDC_REDIRECT_URI", "").split(",")]
    if any(from_env):
        return [u for u in from_env if u]
    return [f"http://127.0.0.1:{ports(PORT_NAMES)['oidc_callback']}/auth/callback"]


def dex_config(uris: list[str], creds: Credentials) -> dict[str, object]:
    return {
        "issuer": issuer(),
        "storage": {"type": "memory"},
        "web": {"http": f"127.0.0.1:{ports(PORT_NAMES)['oidc']}"},
        "logger": {"level": "info", "format": "text"},
        # Signing in is the consent: the test browser posts one form and gets its code.
        "oauth2": {"skipApprovalScreen": True, "responseTypes": ["code"]},
        "staticClients": [{"id": CLIENT_ID, "secret": creds.client_secret,
                           "name": "Tuneplane web", "redirectURIs": uris}],
        "enablePasswordDB": True,
        "staticPasswords": [
            {"email": user.email, "username": user.name, "hash": creds.hashes[user.name],
             "userID": str(uuid.uuid5(uuid.NAMESPACE_URL, f"tuneplane-test:{user.email}")),
             "groups": list(user.groups)}
            for user in USERS
        ],
    }


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
    logfile = DATA / "oidc.log"
    logfile.unlink(missing_ok=True)
    # Env expansion off: a bcrypt hash is full of '$'.
    spawn("oidc", [str(binaries() / "dex"), "serve", str(config_path)],
          env={"DEX_EXPAND_ENV": "false"})

    def serving() -> bool:
        if pid_of("oidc") is None:
            tail = logfile.read_text(errors="replace")[-2000:] if logfile.exists() else ""
            raise ServiceError(f"Dex exited; log {logfile}:\n{tail}")
        return discovery_answers(issuer_url)

    wait_until("oidc", serving, 30, logfile)


def print_env(values: dict[str, str]) -> None:
    lines = "".join(f"export {key}={shlex.quote(value)}\n" for key, value in values.items())
    (DATA / "oidc.env").write_text(lines)
    print(lines, end="")


def up(given_uris: list[str]) -> None:
    bindir = binaries()
    creds = credentials(bindir)
    config = dex_config(redirect_uris(given_uris), creds)
    config_path = STATE / "config.json"
    wanted = json.dumps(config, indent=1) + "\n"
    current = config_path.read_text() if config_path.exists() else None
    issuer_url = str(config["issuer"])
    if running() and current == wanted and running_binary() == bindir / "dex":
        log(f"already running at {issuer_url}")
    else:
        if running():
            log("restarting with a changed configuration or build")
            stop_pid("oidc")
        config_path.touch(mode=0o600)  # it holds the client secret
        config_path.write_text(wanted)
        started = time.monotonic()
        start(config_path, issuer_url)
        log(f"Dex {DEX_VERSION} serving {issuer_url} ({time.monotonic() - started:.1f}s)")
    print_env(settings(config, creds))


def down(wipe: bool) -> None:
    stop_pid("oidc")
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
            print(binaries())
        elif args.command == "down":
            down(args.wipe)
        elif args.command == "status":
            state = "running" if running() else "stopped"
            print(f"oidc\t{state}\t{issuer()}\tDex {DEX_VERSION}")
        else:
            config_path = STATE / "config.json"
            if not running() or not config_path.exists():
                raise ServiceError("not running; start it with scripts/oidc up")
            print_env(settings(json.loads(config_path.read_text()), Credentials.read()))
    except ServiceError as exc:
        log(f"error: {exc}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
