"""Token kinds: each signed with its own derived key, never interchangeable."""

from __future__ import annotations

import jwt
import pytest

from tuneplane.common.tokens import (
    KEPT_LENGTH,
    MAX_DELIVERY_SECONDS,
    TokenError,
    TokenKind,
    TokenSigner,
    derive_key,
    kind_of,
)
from tuneplane.telemetry.v1.identity import MemberKey

SECRET = "a-secret-of-enough-length"
MEMBER = MemberKey("run-1", 2, "rank-3")


def test_workload_token_round_trips_its_binding() -> None:
    signer = TokenSigner(SECRET)
    token = signer.issue_workload(MEMBER, now=1000.0, ttl_seconds=60)
    claims = signer.verify_workload(token, now=1030.0)
    assert claims.member == MEMBER
    assert claims.expires_at == 1060


def test_each_kind_has_its_own_key() -> None:
    keys = {derive_key(SECRET, kind) for kind in TokenKind}
    assert len(keys) == len(TokenKind) == 8
    assert derive_key(SECRET, TokenKind.USER) != derive_key("other-secret-long-x", TokenKind.USER)


@pytest.mark.parametrize("kind", [TokenKind.NODE, TokenKind.USER])
def test_other_kinds_do_not_verify_as_workload(kind: TokenKind) -> None:
    signer = TokenSigner(SECRET)
    token = signer.issue(kind, "x", {"run": "run-1", "attempt": 2, "member": "rank-3"},
                         now=1000.0, ttl_seconds=60)
    with pytest.raises(TokenError):
        signer.verify_workload(token, now=1000.0)


def test_a_token_claiming_another_kind_under_the_right_key_is_refused() -> None:
    key = derive_key(SECRET, TokenKind.WORKLOAD)
    token = jwt.encode({"kind": "node", "aud": "tuneplane-telemetry", "sub": "x", "exp": 2000},
                       key, algorithm="HS256")
    with pytest.raises(TokenError, match="kind 'node' is not accepted"):
        TokenSigner(SECRET).verify_workload(token, now=1000.0)


def test_expired_token_is_refused() -> None:
    signer = TokenSigner(SECRET)
    token = signer.issue_workload(MEMBER, now=1000.0, ttl_seconds=60)
    with pytest.raises(TokenError, match="expired"):
        signer.verify_workload(token, now=1060.0)


@pytest.fixture
def decoded(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The tokens PyJWT decodes (their signatures checked) from now on."""
    tokens: list[str] = []
    real = jwt.decode

    def counted(token: str, *args: object, **kwargs: object) -> object:
        tokens.append(token)
        return real(token, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(jwt, "decode", counted)
    return tokens


def test_a_token_verified_before_still_expires() -> None:
    signer = TokenSigner(SECRET)
    token = signer.issue_workload(MEMBER, now=1000.0, ttl_seconds=60)
    assert signer.verify_workload(token, now=1010.0).member == MEMBER  # its signature kept
    with pytest.raises(TokenError, match="expired"):
        signer.verify_workload(token, now=1060.0)


def test_a_kept_token_is_checked_once_and_its_claims_are_copies(
        decoded: list[str]) -> None:
    signer = TokenSigner(SECRET)
    token = signer.issue(TokenKind.USER, "ada", {"jti": "tok_1"}, now=1000.0, ttl_seconds=60)
    first = signer.verify(token, TokenKind.USER, now=1001.0)
    first["sub"] = "mallory"  # a caller changing its claims changes no one else's
    assert signer.verify(token, TokenKind.USER, now=1002.0)["sub"] == "ada"
    assert len(decoded) == 1
    with pytest.raises(TokenError):  # kept for its kind alone
        signer.verify(token, TokenKind.SESSION, now=1002.0)


@pytest.mark.parametrize("kind", [TokenKind.SIGN_IN, TokenKind.USER])
def test_what_anyone_is_given_or_a_long_token_is_not_kept(
        kind: TokenKind, decoded: list[str]) -> None:
    """A sign-in token is handed to anyone (with their ``next`` in it), and a token's
    length is the sender's: neither may grow what a signer keeps."""
    signer = TokenSigner(SECRET)
    padding = "x" * (KEPT_LENGTH if kind is TokenKind.USER else 10)
    token = signer.issue(kind, "ada", {"next": f"/{padding}"}, now=1000.0, ttl_seconds=60)
    for _ in range(2):
        assert signer.verify(token, kind, now=1001.0)["sub"] == "ada"
    assert len(decoded) == 2


def test_unsigned_token_is_refused() -> None:
    token = jwt.encode({"kind": "workload", "aud": "tuneplane-telemetry", "sub": "x",
                        "exp": 2000}, "", algorithm="none")
    with pytest.raises(TokenError, match="unsupported token algorithm"):
        TokenSigner(SECRET).verify_workload(token, now=1000.0)


def test_token_without_binding_is_refused() -> None:
    signer = TokenSigner(SECRET)
    token = signer.issue(TokenKind.WORKLOAD, "x", {}, now=1000.0, ttl_seconds=60)
    with pytest.raises(TokenError, match="lacks its run/attempt/member binding"):
        signer.verify_workload(token, now=1000.0)


def test_short_secret_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 16 characters"):
        TokenSigner("short")


def test_a_delivery_token_round_trips_its_spool_and_tree() -> None:
    signer = TokenSigner(SECRET)
    token = signer.issue_delivery(MEMBER, "e1", bytes(range(32)), 12, now=1000.0,
                                  ttl_seconds=60)
    claims = signer.verify_delivery(token, now=1030.0)
    assert (claims.member, claims.epoch, claims.root, claims.batches) == \
        (MEMBER, "e1", bytes(range(32)), 12)
    assert kind_of(token) == "delivery"


def test_delivery_and_workload_tokens_are_not_interchangeable() -> None:
    signer = TokenSigner(SECRET)
    delivery = signer.issue_delivery(MEMBER, "e1", bytes(32), 1, now=1000.0, ttl_seconds=60)
    workload = signer.issue_workload(MEMBER, now=1000.0, ttl_seconds=60)
    with pytest.raises(TokenError):
        signer.verify_workload(delivery, now=1000.0)
    with pytest.raises(TokenError):
        signer.verify_delivery(workload, now=1000.0)


@pytest.mark.parametrize("binding", [{"root": "00", "batches": 1, "epoch": "e1"},
                                     {"root": "00" * 32, "batches": 0, "epoch": "e1"},
                                     {"root": "00" * 32, "batches": 1, "epoch": ""},
                                     {"root": "zz", "batches": 1, "epoch": "e1"},
                                     {"batches": 1, "epoch": "e1"}])
def test_a_delivery_token_without_a_whole_tree_is_refused(binding: dict[str, object]) -> None:
    signer = TokenSigner(SECRET)
    token = signer.issue(TokenKind.DELIVERY, "x", {"run": "run-1", "attempt": 2,
                                                   "member": "rank-3", **binding},
                         now=1000.0, ttl_seconds=60)
    with pytest.raises(TokenError):
        signer.verify_delivery(token, now=1000.0)


def test_the_kind_of_what_is_not_a_token_is_none() -> None:
    assert kind_of("not-a-token") is None


def test_a_delivery_token_lives_a_week_at_most() -> None:
    signer = TokenSigner(SECRET)
    with pytest.raises(ValueError, match="7 days"):
        signer.issue_delivery(MEMBER, "e1", bytes(32), 1, now=1000.0,
                              ttl_seconds=MAX_DELIVERY_SECONDS + 1)
    long_lived = signer.issue(TokenKind.DELIVERY, "x", {
        "run": "run-1", "attempt": 2, "member": "rank-3", "epoch": "e1", "root": "00" * 32,
        "batches": 1}, now=1000.0, ttl_seconds=MAX_DELIVERY_SECONDS + 1)
    with pytest.raises(TokenError, match="lives longer"):
        signer.verify_delivery(long_lived, now=1000.0)
