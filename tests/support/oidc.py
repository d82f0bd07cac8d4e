"""The local OpenID Connect provider (Dex, started by ``scripts/oidc``) and a browser's part in
its authorization-code flow with PKCE: follow to the login form, post it, stop at the callback."""

from __future__ import annotations

import base64
import hashlib
import html.parser
import os
import secrets
import shlex
import subprocess
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass

import httpx
import pytest

from tests.support.environment import ROOT

USERS = {"alice": "alice@example.com", "bob": "bob@example.com"}


@dataclass(frozen=True, slots=True)
class OidcProvider:
    issuer: str
    client_id: str
    client_secret: str
    redirect_uri: str
    passwords: Mapping[str, str]  # by email

    @classmethod
    def from_environ(cls, env: Mapping[str, str]) -> OidcProvider:
        return cls(env["TUNEPLANE_OIDC_ISSUER"], env["TUNEPLANE_OIDC_CLIENT_ID"],
                   env["TUNEPLANE_OIDC_CLIENT_SECRET"],
                   env["TUNEPLANE_OIDC_REDIRECT_URI"].split(",")[0],
                   {email: env[f"TUNEPLANE_OIDC_{name.upper()}_PASSWORD"]
                    for name, email in USERS.items()})


def exported(script_output: str) -> dict[str, str]:
    """The ``export NAME=VALUE`` lines a ``scripts/...`` command printed, as a mapping."""
    values = {}
    for line in script_output.splitlines():
        words = shlex.split(line)
        if len(words) == 2 and words[0] == "export":
            name, _, value = words[1].partition("=")
            values[name] = value
    return values


def discovery_answers(issuer: str) -> bool:
    try:
        response = httpx.get(f"{issuer}/.well-known/openid-configuration", timeout=2)
    except httpx.HTTPError:
        return False
    return response.status_code == 200 and response.json().get("issuer") == issuer


@pytest.fixture(scope="session")
def oidc_provider() -> OidcProvider:
    """The provider the environment names if it answers there, else one ``scripts/oidc up``
    starts (and leaves running for the next session, like ``scripts/services``)."""
    issuer = os.environ.get("TUNEPLANE_OIDC_ISSUER", "")
    if issuer and discovery_answers(issuer):
        return OidcProvider.from_environ(os.environ)
    done = subprocess.run([str(ROOT / "scripts" / "oidc"), "up"], capture_output=True,
                          text=True, check=False, timeout=280)
    if done.returncode != 0:
        pytest.fail(f"scripts/oidc up failed:\n{done.stderr[-3000:]}", pytrace=False)
    return OidcProvider.from_environ(exported(done.stdout))


@dataclass(frozen=True, slots=True)
class Pkce:
    verifier: str

    @property
    def challenge(self) -> str:
        digest = hashlib.sha256(self.verifier.encode("ascii")).digest()
        return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")

    @classmethod
    def new(cls) -> Pkce:
        return cls(secrets.token_urlsafe(48))


class _Forms(html.parser.HTMLParser):
    """Each ``<form>``'s action and the names of its inputs."""

    def __init__(self) -> None:
        super().__init__()
        self.forms: list[tuple[str, list[str]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "form":
            self.forms.append((found.get("action") or "", []))
        elif tag == "input" and self.forms and found.get("name"):
            self.forms[-1][1].append(found["name"] or "")


def login_form(page: httpx.Response) -> tuple[str, list[str]]:
    """The absolute URL a login page posts to, and its input names."""
    parser = _Forms()
    parser.feed(page.text)
    forms = [(action, names) for action, names in parser.forms if "password" in names]
    assert len(forms) == 1, f"no single password form at {page.url}:\n{page.text[:2000]}"
    action, names = forms[0]
    return urllib.parse.urljoin(str(page.url), action), names


def follow_until(client: httpx.Client, response: httpx.Response, prefix: str,
                 hops: int = 10) -> httpx.Response | str:
    """Follows redirects like a browser until one points at ``prefix`` (returned, not
    fetched: nothing need listen there) or a page answers (returned)."""
    for _ in range(hops):
        if not response.is_redirect:
            return response
        location = urllib.parse.urljoin(str(response.url), response.headers["location"])
        if location.startswith(prefix):
            return location
        response = client.get(location)
    raise AssertionError(f"more than {hops} redirects from {response.url}")


def authorization_url(provider: OidcProvider, authorization_endpoint: str, pkce: Pkce,
                      state: str, nonce: str) -> str:
    query = urllib.parse.urlencode({
        "response_type": "code", "client_id": provider.client_id,
        "redirect_uri": provider.redirect_uri, "scope": "openid email profile groups",
        "state": state, "nonce": nonce,
        "code_challenge": pkce.challenge, "code_challenge_method": "S256",
    })
    return f"{authorization_endpoint}?{query}"


def sign_in(client: httpx.Client, start: str, redirect_uri: str, email: str,
            password: str) -> httpx.Response | str:
    """From an authorization URL, as a person in a browser: open it, fill in the login form,
    follow on. The callback URL (with ``code`` and ``state``) on success, else the page shown."""
    page = follow_until(client, client.get(start), redirect_uri)
    assert isinstance(page, httpx.Response), f"redirected to {page} before signing in"
    assert page.status_code == 200, page.text[:2000]
    action, names = login_form(page)
    filled = {name: "" for name in names} | {"login": email, "password": password}
    return follow_until(client, client.post(action, data=filled), redirect_uri)
