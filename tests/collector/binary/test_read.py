"""The static collector's ``read`` on JSONL (TensorBoard: ``test_read_tensorboard``), for
both targets (aarch64 under qemu), against the Python collector's reader
(``tuneplane.collector.records``) on the same hostile file: the same records, field for
field and bit for bit, and the same problems with their file and line; its refusals, exit
statuses and help; and a binary that is static and small."""

from __future__ import annotations

import json
import struct
import subprocess
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.support.collector_binary import TARGETS, binary, command, run
from tuneplane.collector import records

LINES = [
    b'{"step": 0, "wall_time": 1700000000.25, "metrics": {"z/loss": 0.5, "a/acc": 1}}',
    b'{"step": 1, "wall_time": 1700000001, "metrics": {"x": NaN, "y": Infinity, '
    b'"w": -Infinity}}',
    b'{"step": 2, "wall_time": 2, "metrics": {"x": "NaN", "y": "inf", "w": "-Infinity"}}',
    b"",
    b"  \t ",
    b'{"step": 3, "wall_time": 3, "metrics": {"crlf": 0.1}}\r',
    b'{"step": 1.5, "wall_time": 1, "metrics": {"x": 1}}',
    b'{"step": true, "wall_time": 1, "metrics": {"x": 1}}',
    b'{"step": 9223372036854775808, "wall_time": 1, "metrics": {"x": 1}}',
    b'{"step": -9223372036854775808, "wall_time": 1, "metrics": {"min": 1}}',
    b'{"step": 4, "metrics": {"x": 1}}',
    b'{"step": 4, "wall_time": "soon", "metrics": {"x": 1}}',
    b'{"step": 4, "wall_time": NaN, "metrics": {"nan wall": 1}}',
    b'{"step": 5, "wall_time": 5, "metrics": {}}',
    b'{"step": 5, "wall_time": 5, "metrics": [1]}',
    b'{"step": 5, "wall_time": 5, "metrics": {"x": null}}',
    b'{"step": 5, "wall_time": 5, "metrics": {"x": false}}',
    b'{"step": 5, "wall_time": 5, "metrics": {"x": "high"}}',
    b'{"step": 5, "wall_time": 5, "metrics": {"x": [1, 2]}}',
    b'{"step": 5, "wall_time": 5, "metrics": {"": 1}}',
    b'{"step": 5, "wall_time": 5, "metrics": {"a\\tb": 1}}',
    b'{"step": 5, "wall_time": 5, "metrics": {"' + b"n" * 513 + b'": 1}}',
    '{"step": 6, "wall_time": 6, "metrics": {"損失": 2, "\\u00e9t\\u00e9": 3}}'.encode(),
    b'{"step": 7, "wall_time": 7, "metrics": {"a": 1, "b": 2, "a": 3}}',
    b'{"step": 8, "wall_time": 8, "metrics": {"big": 1000000000000000000000000000000}}',
    b'{"step": 9, "wall_time": 9, "metrics": {"max": 1e308, "neg0": -0.0, "tiny": 5e-324, '
    b'"sum": 0.30000000000000004}}',
    b"[1, 2]",
    b'"a string"',
    b"garbage",
    b'{"step": 10, "wall_time": 10, "metrics": {"x": 1}} trailing',
    b'{"step": 11, "wall_time": 11, "metrics": {"x": 1}}\xff',
    b'{"step": 12, "wall_time": 12, "metrics": {"\\ud800": 1}}',
    b'{"step": 12, "wall_time": 12, "metrics": {"last": 12}}',
]
PARTIAL = b'{"step": 13, "wall_time": 13, "metr'


def exact(value: Any) -> Any:
    """Floats as their bits (NaN, -0.0 and the last digit count), the rest as it is."""
    if isinstance(value, float):
        return ("float", struct.pack(">d", value).hex())
    if isinstance(value, dict):
        return {k: exact(v) for k, v in value.items()}
    return value


def reference(path: Path) -> tuple[list[Any], list[str]]:
    """What the Python collector's ``read`` prints (its records through orjson, as its CLI
    writes them), and its problems in order."""
    problems: list[str] = []
    found = [exact(json.loads(orjson.dumps(r))) for r in records.records(path, problems.append)]
    return found, problems


#: Where a problem goes on in the decoder's own words (serde_json's, prost's; orjson's, upb's).
DECODERS = (": not JSON: ", ": not a TensorBoard Event: ")


def reason(problem: str) -> str:
    """A problem's wording, but for the decoder's own words after what it failed to decode."""
    for decoder in DECODERS:
        if decoder in problem:
            return problem.split(decoder)[0] + decoder
    return problem


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("jsonl") / "metrics.jsonl"
    path.write_bytes(b"\n".join(LINES) + b"\n" + PARTIAL)
    return path


@pytest.mark.parametrize("target", TARGETS)
def test_read_gives_what_the_python_reader_gives(target: str, hostile: Path) -> None:
    done = run(target, "read", str(hostile))
    assert done.returncode == 0, done.stderr
    want_records, want_problems = reference(hostile)
    got = [exact(json.loads(line)) for line in done.stdout.splitlines()]
    assert got == want_records
    assert len(got) == 21  # the corpus's good metrics, so neither side reads nothing
    problems = done.stderr.decode().splitlines()
    assert [reason(p) for p in problems] == [reason(p) for p in want_problems]
    assert problems[-1] == f"{hostile}:{len(LINES) + 1}: incomplete last line; not read"


@pytest.mark.parametrize("target", TARGETS)
def test_refusals_and_exit_statuses(target: str, hostile: Path, tmp_path: Path) -> None:
    missing = run(target, "read", str(tmp_path / "nothing.jsonl"), str(hostile))
    assert missing.returncode == 1
    assert missing.stderr.decode().startswith(
        f"tuneplane-collector read: {tmp_path}/nothing.jsonl: no such file or directory")
    assert len(missing.stdout.splitlines()) == 21  # the other path is still read
    for usage, says in (([], b"Usage: tuneplane-collector <COMMAND>"),
                        (["read"], b"Usage: tuneplane-collector read <PATH>..."),
                        (["spool"], b"Usage: tuneplane-collector spool <COMMAND>"),
                        (["run", "--run", "r"], b"required arguments were not provided")):
        refused = run(target, *usage)
        assert refused.returncode == 2, usage
        assert says in refused.stderr, refused.stderr
    helped = run(target, "--help")
    assert helped.returncode == 0
    for name in (b"run", b"read", b"spool"):
        assert b"\n  " + name + b" " in helped.stdout, helped.stdout


def test_a_reader_that_stops_early_ends_it_quietly(tmp_path: Path) -> None:
    path = tmp_path / "long.jsonl"
    path.write_bytes(b"".join(b'{"step": %d, "wall_time": 1, "metrics": {"x": 1}}\n' % step
                              for step in range(200_000)))
    target = "x86_64-unknown-linux-musl"
    done = subprocess.run(f"{command(target)[0]} read {path} | head -1", shell=True,
                          capture_output=True, timeout=60, check=False)
    assert done.stdout.count(b"\n") == 1
    assert done.stderr == b""


def interpreter(elf: bytes) -> bool:
    """Whether a 64-bit little-endian ELF asks for a dynamic loader (a PT_INTERP header)."""
    assert elf[:6] == b"\x7fELF\x02\x01"
    phoff, = struct.unpack_from("<Q", elf, 0x20)
    entry_size, count = struct.unpack_from("<HH", elf, 0x36)
    return any(struct.unpack_from("<I", elf, phoff + i * entry_size)[0] == 3
               for i in range(count))


@pytest.mark.parametrize(("target", "machine"), [("x86_64-unknown-linux-musl", 62),
                                                 ("aarch64-unknown-linux-musl", 183)])
def test_each_binary_is_static_small_and_for_its_machine(target: str, machine: int) -> None:
    elf = binary(target).read_bytes()
    assert struct.unpack_from("<H", elf, 0x12)[0] == machine
    assert not interpreter(elf), f"{target}'s binary needs a dynamic loader"
    assert len(elf) <= 10 * 2**20
