"""Dex, the OpenID Connect provider scripts/oidc runs: its build from its Go module
(scripts/dex, cached under ``~/.cache/tuneplane/dex/``), its users and the credentials made
for them once (``.services/oidc/credentials.json``), and its configuration."""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import sys
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path

from scripts.lib.processes import run
from scripts.stack.common import CACHE, DATA, ROOT, ServiceError

#: Dex v2.45.1 (the first release whose static users carry groups is v2.45.0), pinned by
#: scripts/dex/go.mod as the pseudo-version the module proxy serves it by.
DEX_VERSION = "v2.45.1"
BUILD_MODULE = ROOT / "scripts" / "dex"
GO_BUILD = ("go", "build", "-mod=readonly", "-trimpath", "-buildvcs=false",
            f"-ldflags=-s -w -X main.version={DEX_VERSION}")
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
    hashed = run("oidc", [str(bindir / "hashpassword")],
                 input="".join(f"{p}\n" for p in passwords.values()))
    made = Credentials(secrets.token_urlsafe(32), passwords,
                       dict(zip(passwords, hashed.split(), strict=True)))
    STATE.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    partial.touch(mode=0o600)
    partial.write_text(json.dumps(asdict(made), indent=1) + "\n")
    partial.rename(path)
    return made


def issuer(port: int) -> str:
    return f"http://127.0.0.1:{port}/dex"


def config(port: int, uris: list[str], creds: Credentials) -> dict[str, object]:
    """Dex's configuration: plain http on 127.0.0.1:``port``, state in memory, one client
    (``tuneplane-web``, redirecting to ``uris``) and the static users."""
    return {
        "issuer": issuer(port),
        "storage": {"type": "memory"},
        "web": {"http": f"127.0.0.1:{port}"},
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
