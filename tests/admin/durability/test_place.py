"""Where an address puts a store: loopback is this machine, a Unix socket too; names are
taken as they are."""

from __future__ import annotations

import pytest

from tuneplane.admin.durability.place import LOOPBACK, elsewhere, machine, on_loopback


@pytest.mark.parametrize(("host", "local"), [
    ("localhost", True), ("LocalHost", True), ("kafka.localhost", True), ("127.0.0.1", True),
    ("127.3.2.1", True), ("::1", True), ("[::1]", True), ("10.0.0.1", False),
    ("kafka-0.kafka.ml.svc", False), ("", False)])
def test_loopback(host: str, local: bool) -> None:
    assert on_loopback(host) is local


def test_every_loopback_address_is_one_machine() -> None:
    assert machine("127.0.0.1") == machine("localhost") == LOOPBACK
    assert machine("K1.example") == "k1.example"


@pytest.mark.parametrize(("address", "server", "away"), [
    (None, "10.0.0.1", False), ("127.0.0.1", None, False), ("10.0.0.1", "10.0.0.1", False),
    ("10.0.0.2", "10.0.0.1", True), ("10.0.0.2", None, True), ("10.0.0.2", "127.0.0.1", True)])
def test_elsewhere(address: str | None, server: str | None, away: bool) -> None:
    assert elsewhere(address, server) is away
