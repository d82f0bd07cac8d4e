"""The OpenID Connect provider ``scripts/oidc`` starts, end to end without the web service: a
browser's authorization-code flow with PKCE, the code exchanged by the client, the ID token
checked against the provider's published keys, and the users' groups in it."""

from __future__ import annotations

import base64
import json
import secrets
import urllib.parse
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import httpx
import jwt
import pytest

from tests.support.oidc import (
    USERS,
    OidcProvider,
    Pkce,
    authorization_url,
    follow_until,
    sign_in,
)


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=10) as browser:
        yield browser


@pytest.fixture(scope="module")
def discovery(oidc_provider: OidcProvider) -> dict[str, Any]:
    response = httpx.get(f"{oidc_provider.issuer}/.well-known/openid-configuration")
    response.raise_for_status()
    document: dict[str, Any] = response.json()
    return document


def code_for(client: httpx.Client, provider: OidcProvider, discovery: dict[str, Any],
             user: str, pkce: Pkce) -> str:
    state, nonce = secrets.token_urlsafe(16), secrets.token_urlsafe(16)
    email = USERS[user]
    callback = sign_in(client, authorization_url(provider, discovery["authorization_endpoint"],
                                                 pkce, state, nonce),
                       provider.redirect_uri, email, provider.passwords[email])
    assert isinstance(callback, str), f"no redirect to the callback: {callback}"
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(callback).query)
    assert query["state"] == [state]
    return query["code"][0]


def exchange(provider: OidcProvider, discovery: dict[str, Any], code: str,
             verifier: str) -> httpx.Response:
    return httpx.post(discovery["token_endpoint"],
                      auth=(provider.client_id, provider.client_secret),
                      data={"grant_type": "authorization_code", "code": code,
                            "redirect_uri": provider.redirect_uri, "code_verifier": verifier})


def verified_id_token(provider: OidcProvider, discovery: dict[str, Any],
                      token: str) -> dict[str, Any]:
    """The ID token's claims, its signature checked against the provider's JWKS."""
    keys = jwt.PyJWKSet.from_dict(httpx.get(discovery["jwks_uri"]).json())
    kid = jwt.get_unverified_header(token)["kid"]
    key = next(k for k in keys.keys if k.key_id == kid)
    claims: dict[str, Any] = jwt.decode(
        token, key, algorithms=discovery["id_token_signing_alg_values_supported"],
        audience=provider.client_id, issuer=provider.issuer,
        options={"require": ["exp", "iat", "sub", "nonce"]})
    return claims


def test_discovery_offers_the_code_flow_with_pkce(oidc_provider: OidcProvider,
                                                  discovery: dict[str, Any]) -> None:
    assert discovery["issuer"] == oidc_provider.issuer
    assert "code" in discovery["response_types_supported"]
    assert "S256" in discovery["code_challenge_methods_supported"]
    assert "groups" in discovery["scopes_supported"]


@pytest.mark.parametrize(("user", "groups"), [("alice", ["vision-editors"]),
                                              ("bob", ["vision-viewers"])])
def test_a_signed_in_user_gets_a_signed_id_token_with_their_groups(
        client: httpx.Client, oidc_provider: OidcProvider, discovery: dict[str, Any],
        user: str, groups: list[str]) -> None:
    pkce = Pkce.new()
    code = code_for(client, oidc_provider, discovery, user, pkce)

    response = exchange(oidc_provider, discovery, code, pkce.verifier)

    assert response.status_code == 200, response.text
    tokens = response.json()
    assert tokens["token_type"].lower() == "bearer"
    claims = verified_id_token(oidc_provider, discovery, tokens["id_token"])
    assert claims["email"] == USERS[user]
    assert claims["email_verified"] is True
    assert claims["groups"] == groups


def test_a_forged_id_token_fails_verification(client: httpx.Client, oidc_provider: OidcProvider,
                                              discovery: dict[str, Any]) -> None:
    pkce = Pkce.new()
    code = code_for(client, oidc_provider, discovery, "bob", pkce)
    token = exchange(oidc_provider, discovery, code, pkce.verifier).json()["id_token"]
    header, _, signature = token.split(".")
    claims = jwt.decode(token, options={"verify_signature": False})
    forged = json.dumps({**claims, "groups": ["vision-editors"]}).encode()
    forged_payload = base64.urlsafe_b64encode(forged).rstrip(b"=").decode()

    with pytest.raises(jwt.InvalidSignatureError):
        verified_id_token(oidc_provider, discovery, f"{header}.{forged_payload}.{signature}")


def test_the_code_is_useless_without_its_verifier(client: httpx.Client,
                                                  oidc_provider: OidcProvider,
                                                  discovery: dict[str, Any]) -> None:
    pkce = Pkce.new()
    code = code_for(client, oidc_provider, discovery, "alice", pkce)

    stolen = exchange(oidc_provider, discovery, code, Pkce.new().verifier)
    missing = httpx.post(discovery["token_endpoint"],
                         auth=(oidc_provider.client_id, oidc_provider.client_secret),
                         data={"grant_type": "authorization_code", "code": code,
                               "redirect_uri": oidc_provider.redirect_uri})

    assert stolen.status_code == 400
    assert stolen.json()["error"] == "invalid_grant"
    assert missing.status_code == 400
    assert exchange(oidc_provider, discovery, code, pkce.verifier).status_code == 200


def test_a_wrong_password_gets_no_code(client: httpx.Client, oidc_provider: OidcProvider,
                                       discovery: dict[str, Any]) -> None:
    start = authorization_url(oidc_provider, discovery["authorization_endpoint"], Pkce.new(),
                              "state", "nonce")

    shown = sign_in(client, start, oidc_provider.redirect_uri, USERS["alice"], "not-her-password")

    assert isinstance(shown, httpx.Response), f"redirected to the callback: {shown}"
    assert shown.status_code == 401
    assert "Invalid Email Address and password" in shown.text


def test_an_unregistered_redirect_uri_is_refused(client: httpx.Client,
                                                 oidc_provider: OidcProvider,
                                                 discovery: dict[str, Any]) -> None:
    elsewhere = replace(oidc_provider, redirect_uri="http://127.0.0.1:9/auth/callback")
    start = authorization_url(elsewhere, discovery["authorization_endpoint"], Pkce.new(),
                              "state", "nonce")

    shown = follow_until(client, client.get(start), elsewhere.redirect_uri)

    assert isinstance(shown, httpx.Response), f"redirected to the unregistered URI: {shown}"
    assert shown.status_code == 400
