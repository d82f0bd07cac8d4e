"""scripts/lib/ports.py: whether a port is free or answers, and ports picked free once and
kept by name in a json file (``.services/ports.json``), also when two scripts add names at
once."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from scripts.lib.ports import (
    NoFreePort,
    PortFile,
    free_port,
    listening_range,
    port_free,
    port_open,
)


@pytest.fixture
def listening() -> Iterator[int]:
    """A port something listens on."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        yield int(server.getsockname()[1])


def test_a_listening_port_is_open_and_not_free(listening: int) -> None:
    assert port_open(listening)
    assert not port_free(listening)


def test_a_closed_port_is_free_and_not_open() -> None:
    port = free_port()
    assert port_free(port)
    assert not port_open(port)


def test_the_listening_range_stays_below_the_ephemeral_ports() -> None:
    ports = listening_range()
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    assert ports.start == 10_000
    assert ports.stop == max(low, 20_000)


def test_ports_are_picked_free_distinct_and_kept(tmp_path: Path) -> None:
    path = tmp_path / "state" / "ports.json"
    names = ("postgres", "kafka", "s3")
    picked = PortFile(path).ports(names)
    assert list(picked) == list(names)
    assert len(set(picked.values())) == 3
    assert all(port in listening_range() for port in picked.values())
    assert json.loads(path.read_text()) == picked
    assert path.read_text().endswith("}\n")
    assert PortFile(path).ports(names) == picked  # a later invocation reads them back
    assert PortFile(path).ports(("s3",)) == {"s3": picked["s3"]}
    assert not list(path.parent.glob("*.partial"))


def test_a_new_name_is_added_beside_the_others(tmp_path: Path) -> None:
    path = tmp_path / "ports.json"
    first = PortFile(path).ports(("postgres", "kafka"))
    both = PortFile(path).ports(("oidc", "postgres"))
    assert both["postgres"] == first["postgres"]
    assert both["oidc"] not in first.values()
    assert json.loads(path.read_text()) == {**first, "oidc": both["oidc"]}


def test_taken_ports_and_ports_already_kept_are_skipped(tmp_path: Path, listening: int) -> None:
    path = tmp_path / "ports.json"
    kept, spare = free_port(), free_port()
    path.write_text(json.dumps({"postgres": kept}))
    assert PortFile(path).ports(("postgres", "kafka"), candidates=[listening, kept, spare]) == {
        "postgres": kept, "kafka": spare}


def test_no_free_port_left_is_an_error_and_changes_nothing(tmp_path: Path,
                                                           listening: int) -> None:
    path = tmp_path / "ports.json"
    with pytest.raises(NoFreePort, match="no free port left for kafka"):
        PortFile(path).ports(("kafka",), candidates=[listening])
    assert not path.exists()


def test_two_scripts_adding_names_at_once_keep_all(tmp_path: Path) -> None:
    path = tmp_path / "ports.json"
    names = [f"name{i}" for i in range(8)]
    start = threading.Barrier(len(names))
    got: dict[str, int] = {}

    def add(name: str) -> None:
        start.wait()
        got.update(PortFile(path).ports((name,)))

    threads = [threading.Thread(target=add, args=(name,)) for name in names]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert PortFile(path).saved() == got
    assert sorted(got) == names
    assert len(set(got.values())) == len(names)
