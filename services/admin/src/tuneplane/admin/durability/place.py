"""Where a store's address puts it, as far as the address alone says: on this machine (a
loopback address or name, a Unix socket), or somewhere else. Names are never resolved: a
name is taken for the machine it names."""

from __future__ import annotations

import ipaddress

LOOPBACK = "this machine (loopback)"


def on_loopback(host: str) -> bool:
    """Whether ``host`` is this machine: ``localhost`` (and ``*.localhost``), 127.0.0.0/8,
    ``::1``."""
    name = host.strip("[]").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def machine(host: str) -> str:
    """The machine ``host`` stands for: every loopback address is the same one."""
    return LOOPBACK if on_loopback(host) else host.lower()


def elsewhere(address: str | None, server: str | None) -> bool:
    """Whether a peer connected from ``address`` runs on another machine than a server
    reached at ``server``: not over a Unix socket (None), not on loopback, not the server's
    own address."""
    if address is None or on_loopback(address):
        return False
    return server is None or machine(address) != machine(server)
