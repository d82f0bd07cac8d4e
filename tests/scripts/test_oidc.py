"""scripts/oidc without starting Dex: its status line on kept ports, ``env`` refused while it
is not running, and the configuration Dex is given."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from scripts.stack import dex
from tests.support.environment import ROOT


def oidc(data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(ROOT / "scripts" / "oidc"), *args], capture_output=True,
                          text=True, check=False, timeout=60,
                          env={**os.environ, "TUNEPLANE_SERVICES_DIR": str(data)})


def test_status_while_stopped_names_the_issuer_on_its_kept_port(tmp_path: Path) -> None:
    done = oidc(tmp_path, "status")
    assert done.returncode == 0, done.stderr
    ports = json.loads((tmp_path / "ports.json").read_text())
    assert sorted(ports) == ["oidc", "oidc_callback"]
    assert done.stdout == (f"oidc\tstopped\thttp://127.0.0.1:{ports['oidc']}/dex\t"
                           f"Dex {dex.DEX_VERSION}\n")


def test_env_while_stopped_is_an_error(tmp_path: Path) -> None:
    done = oidc(tmp_path, "env")
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr == "oidc: error: not running; start it with scripts/oidc up\n"


def test_stopping_what_never_ran(tmp_path: Path) -> None:
    done = oidc(tmp_path, "down")
    assert (done.returncode, done.stderr) == (0, "oidc: stopped\n")


def test_the_configuration_serves_loopback_with_one_client_and_the_users() -> None:
    creds = dex.Credentials("secret", {"alice": "a", "bob": "b"},
                            {"alice": "$2a$10$alice", "bob": "$2a$10$bob"})
    config = dex.config(12345, ["http://127.0.0.1:1/auth/callback"], creds)
    assert config["issuer"] == "http://127.0.0.1:12345/dex"
    assert config["web"] == {"http": "127.0.0.1:12345"}
    assert config["staticClients"] == [{"id": "tuneplane-web", "secret": "secret",
                                        "name": "Tuneplane web",
                                        "redirectURIs": ["http://127.0.0.1:1/auth/callback"]}]
    users = config["staticPasswords"]
    assert isinstance(users, list)
    assert [(u["email"], u["hash"], u["groups"]) for u in users] == [
        ("alice@example.com", "$2a$10$alice", ["vision-editors"]),
        ("bob@example.com", "$2a$10$bob", ["vision-viewers"])]
