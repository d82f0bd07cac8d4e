"""The OpenID Connect client: authorization code with PKCE (S256), for signing people in
through the team's provider. PyJWT checks the ID token (signature by the provider's
published keys, issuer, audience, expiry, nonce); httpx speaks to the provider.

``begin`` makes the authorization URL and what the browser keeps meanwhile (state, nonce,
the PKCE verifier, where to go next: in a signed, HttpOnly cookie of ten minutes);
``finish`` exchanges the code and answers who signed in, with its groups. The provider's
discovery document and keys are read when first needed and kept an hour; an ID token
signed by a key not yet known has the keys read again, once.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import time
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import urlencode

import httpx
import jwt

from tuneplane.web.auth.oidc_settings import OidcSettings

SCOPES: Final = "openid email profile groups"
KEEP_SECONDS: Final = 3600
ALGORITHMS: Final = ("RS256", "RS384", "RS512", "ES256", "ES384", "PS256")


class SignInFailed(Exception):
    """The provider's answer does not sign anyone in; the message says why."""


@dataclass(frozen=True, slots=True)
class Identity:
    username: str
    groups: frozenset[str]


@dataclass(frozen=True, slots=True)
class Pending:
    """What the browser keeps between leaving for the provider and coming back."""

    state: str
    nonce: str
    verifier: str
    next: str

    def challenge(self) -> str:
        digest = hashlib.sha256(self.verifier.encode()).digest()
        return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


class OidcClient:
    def __init__(self, settings: OidcSettings, *, timeout: float = 10.0) -> None:
        if not settings.enabled:
            raise ValueError("no OpenID Connect provider is configured")
        self._settings = settings
        self._timeout = timeout
        self._discovery: tuple[float, dict[str, Any]] | None = None
        self._keys: jwt.PyJWKSet | None = None

    async def _get(self, url: str) -> dict[str, Any]:
        try:
            async with httpx.AsyncClient(timeout=self._timeout) as http:
                response = await http.get(url)
                response.raise_for_status()
                found: dict[str, Any] = response.json()
                return found
        except (httpx.HTTPError, ValueError) as exc:
            raise SignInFailed(f"the identity provider did not answer {url}: {exc}") from None

    async def _document(self) -> dict[str, Any]:
        if self._discovery is None or time.monotonic() - self._discovery[0] > KEEP_SECONDS:
            issuer = str(self._settings.issuer).rstrip("/")
            found = await self._get(f"{issuer}/.well-known/openid-configuration")
            if found.get("issuer") != self._settings.issuer:
                raise SignInFailed(f"the provider names itself {found.get('issuer')!r}, not "
                                   f"{self._settings.issuer!r}")
            self._discovery, self._keys = (time.monotonic(), found), None
        return self._discovery[1]

    async def _key(self, kid: str | None) -> jwt.PyJWK:
        for fresh in (False, True):
            if self._keys is None or fresh:
                self._keys = jwt.PyJWKSet.from_dict(
                    await self._get((await self._document())["jwks_uri"]))
            for key in self._keys.keys:
                if kid is None or key.key_id == kid:
                    return key
        raise SignInFailed(f"the ID token is signed by a key the provider does not publish "
                           f"({kid!r})")

    async def begin(self, next_path: str) -> tuple[str, Pending]:
        """The provider's authorization URL, and what to keep until the callback."""
        pending = Pending(secrets.token_urlsafe(24), secrets.token_urlsafe(24),
                          secrets.token_urlsafe(48), next_path)
        query = urlencode({
            "response_type": "code", "client_id": self._settings.client_id,
            "redirect_uri": self._settings.redirect_uri, "scope": SCOPES,
            "state": pending.state, "nonce": pending.nonce,
            "code_challenge": pending.challenge(), "code_challenge_method": "S256"})
        return f"{(await self._document())['authorization_endpoint']}?{query}", pending

    async def finish(self, code: str, pending: Pending) -> Identity:
        """Who the provider signed in with ``code``; raises SignInFailed."""
        document = await self._document()
        try:
            async with httpx.AsyncClient(timeout=self._timeout) as http:
                response = await http.post(document["token_endpoint"], data={
                    "grant_type": "authorization_code", "code": code,
                    "redirect_uri": self._settings.redirect_uri,
                    "code_verifier": pending.verifier},
                    auth=(str(self._settings.client_id), str(self._settings.client_secret)))
        except httpx.HTTPError as exc:
            raise SignInFailed(f"the identity provider did not answer: {exc}") from None
        if response.status_code != 200:
            raise SignInFailed(f"the identity provider refused the code: "
                               f"{response.status_code} {response.text[:200]}")
        id_token = response.json().get("id_token")
        if not isinstance(id_token, str):
            raise SignInFailed("the identity provider answered no ID token")
        return self._identity(await self._claims(id_token), pending)

    async def _claims(self, id_token: str) -> dict[str, Any]:
        try:
            header = jwt.get_unverified_header(id_token)
            if header.get("alg") not in ALGORITHMS:
                raise SignInFailed(f"ID token algorithm {header.get('alg')!r} is not taken")
            key = await self._key(header.get("kid"))
            claims: dict[str, Any] = jwt.decode(
                id_token, key.key, algorithms=list(ALGORITHMS),
                audience=self._settings.client_id, issuer=self._settings.issuer,
                options={"require": ["exp", "iat", "iss", "aud", "sub"]}, leeway=30)
        except jwt.PyJWTError as exc:
            raise SignInFailed(f"the ID token does not verify: {exc}") from None
        return claims

    def _identity(self, claims: dict[str, Any], pending: Pending) -> Identity:
        if claims.get("nonce") != pending.nonce:
            raise SignInFailed("the ID token's nonce is not this sign-in's")
        name = claims.get(self._settings.username_claim)
        if not isinstance(name, str) or not name:
            raise SignInFailed(f"the ID token has no {self._settings.username_claim!r} claim")
        # Only an address the provider vouches for: one a person typed in (no claim, or
        # anything but true) would sign it in as whoever holds that name here.
        if self._settings.username_claim == "email" and claims.get("email_verified") is not True:
            raise SignInFailed(f"the provider has not verified {name!r} (its ID token's "
                               "email_verified is not true)")
        groups = claims.get("groups", [])
        if not isinstance(groups, list) or not all(isinstance(g, str) for g in groups):
            raise SignInFailed("the ID token's groups claim is not a list of names")
        return Identity(name, frozenset(groups))
