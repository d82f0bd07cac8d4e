"""The static collector's ``read`` on JSONL (TensorBoard: ``test_read_tensorboard``), for
both targets (aarch64 under qemu), against what each line of a hostile file holds: every
metric of a good line, field for field and bit for bit; each bad line said with its file,
line and reason, and reading going on; its refusals, exit statuses and help; and a binary
that is static and small."""

from __future__ import annotations

import json
import math
import struct
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support.collector_binary import TARGETS, binary, command, run

NAN, INF = math.nan, math.inf
#: The step, wall time (NaN: none, which read writes null) and metrics a line holds.
Good = tuple[int, float, dict[str, float]]
#: Each line and what it holds: its columns, why it is refused, or None (a blank line).
LINES: list[tuple[bytes, Good | str | None]] = [
    (b'{"step": 0, "wall_time": 1700000000.25, "metrics": {"z/loss": 0.5, "a/acc": 1}}',
     (0, 1700000000.25, {"z/loss": 0.5, "a/acc": 1.0})),
    (b'{"step": 1, "wall_time": 1700000001, "metrics": {"x": NaN, "y": Infinity, '
     b'"w": -Infinity}}', (1, 1700000001.0, {"x": NAN, "y": INF, "w": -INF})),
    (b'{"step": 2, "wall_time": 2, "metrics": {"x": "NaN", "y": "inf", "w": "-Infinity"}}',
     (2, 2.0, {"x": NAN, "y": INF, "w": -INF})),
    (b"", None),
    (b"  \t ", None),
    (b'{"step": 3, "wall_time": 3, "metrics": {"crlf": 0.1}}\r', (3, 3.0, {"crlf": 0.1})),
    (b'{"step": 1.5, "wall_time": 1, "metrics": {"x": 1}}',
     "'step' must be a 64-bit integer, got 1.5"),
    (b'{"step": true, "wall_time": 1, "metrics": {"x": 1}}',
     "'step' must be a 64-bit integer, got True"),
    (b'{"step": 9223372036854775808, "wall_time": 1, "metrics": {"x": 1}}',
     "'step' must be a 64-bit integer"),
    (b'{"step": -9223372036854775808, "wall_time": 1, "metrics": {"min": 1}}',
     (-2**63, 1.0, {"min": 1.0})),
    (b'{"step": 4, "metrics": {"x": 1}}', (4, NAN, {"x": 1.0})),  # no wall time: null
    (b'{"step": 4, "wall_time": null, "metrics": {"null wall": 1}}',
     (4, NAN, {"null wall": 1.0})),
    (b'{"step": 4, "wall_time": "soon", "metrics": {"x": 1}}',
     "'wall_time' must be a number of seconds, got 'soon'"),
    (b'{"step": 4, "wall_time": NaN, "metrics": {"nan wall": 1}}', (4, NAN, {"nan wall": 1.0})),
    (b'{"step": 5, "wall_time": 5, "metrics": {}}',
     "'metrics' must be a non-empty object of name: number"),
    (b'{"step": 5, "wall_time": 5, "metrics": [1]}',
     "'metrics' must be a non-empty object of name: number"),
    (b'{"step": 5, "wall_time": 5, "metrics": {"x": null}}', "metric 'x' is null, not a number"),
    (b'{"step": 5, "wall_time": 5, "metrics": {"x": false}}', "metric 'x' is false"),
    (b'{"step": 5, "wall_time": 5, "metrics": {"x": "high"}}',
     "metric 'x' is 'high', not a number"),
    (b'{"step": 5, "wall_time": 5, "metrics": {"x": [1, 2]}}',
     "metric 'x' is [1, 2], not a number"),
    (b'{"step": 5, "wall_time": 5, "metrics": {"": 1}}', "metric name is empty"),
    (b'{"step": 5, "wall_time": 5, "metrics": {"a\\tb": 1}}',
     "metric name holds the control character '\\t' at 1"),
    (b'{"step": 5, "wall_time": 5, "metrics": {"' + b"n" * 513 + b'": 1}}',
     "metric name is 513 bytes, over the 512 byte bound"),
    ('{"step": 6, "wall_time": 6, "metrics": {"損失": 2, "\\u00e9t\\u00e9": 3}}'.encode(),
     (6, 6.0, {"損失": 2.0, "été": 3.0})),
    (b'{"step": 7, "wall_time": 7, "metrics": {"a": 1, "b": 2, "a": 3}}',
     (7, 7.0, {"a": 3.0, "b": 2.0})),  # a repeated name: its last value, in its first place
    (b'{"step": 8, "wall_time": 8, "metrics": {"big": 1000000000000000000000000000000}}',
     (8, 8.0, {"big": 1e30})),
    (b'{"step": 9, "wall_time": 9, "metrics": {"max": 1e308, "neg0": -0.0, "tiny": 5e-324, '
     b'"sum": 0.30000000000000004}}',
     (9, 9.0, {"max": 1e308, "neg0": -0.0, "tiny": 5e-324, "sum": 0.30000000000000004})),
    (b'{"step": 9, "wall_time": 9, "metrics": {"x": 1' + b"0" * 400 + b"}}",
     "not JSON: number out of range"),
    (b'{"step": 9, "wall_time": 1' + b"0" * 400 + b', "metrics": {"x": 1}}',
     "not JSON: number out of range"),
    (b"[1, 2]", "not a JSON object"),
    (b'"a string"', "not a JSON object"),
    (b"garbage", "not JSON: "),
    (b'{"step": 10, "wall_time": 10, "metrics": {"x": 1}} trailing', "not JSON: "),
    (b'{"step": 11, "wall_time": 11, "metrics": {"x": 1}}\xff', "not JSON: "),
    (b'{"step": 12, "wall_time": 12, "metrics": {"\\ud800": 1}}', "not JSON: "),
    (b'{"step": 12, "wall_time": 12, "metrics": {"x": "\\udfff", "y": NaN}}', "not JSON: "),
    (b'{"step": 12, "wall_time": 12, "metrics": {"last": 12}}', (12, 12.0, {"last": 12.0})),
]
PARTIAL = b'{"step": 13, "wall_time": 13, "metr'


def exact(value: Any) -> Any:
    """Floats as their bits (NaN, -0.0 and the last digit count), the rest as it is."""
    if isinstance(value, float):
        return ("float", struct.pack(">d", value).hex())
    if isinstance(value, dict):
        return {k: exact(v) for k, v in value.items()}
    return value


def shown(value: float) -> float | str | None:
    """A number as ``read`` writes it: JSON has no NaN or infinities."""
    if math.isnan(value):
        return "nan"
    return ("inf" if value > 0 else "-inf") if math.isinf(value) else value


def expected(name: str) -> tuple[list[dict[str, Any]], list[tuple[int, str]]]:
    """The records of LINES as ``read`` prints them, and the (line, reason) of each refusal."""
    records: list[dict[str, Any]] = []
    refusals: list[tuple[int, str]] = []
    offset = 0
    for number, (raw, holds) in enumerate(LINES, start=1):
        if isinstance(holds, str):
            refusals.append((number, holds))
        elif holds is not None:
            step, wall_time, metrics = holds
            wall = None if math.isnan(wall_time) else wall_time  # JSON's null
            records += [{"kind": "scalar", "file": name, "offset": offset, "line": number,
                         "tag": tag, "step": step, "wall_time": wall, "value": shown(value)}
                        for tag, value in metrics.items()]
        offset += len(raw) + 1
    return records, refusals


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("jsonl") / "metrics.jsonl"
    path.write_bytes(b"\n".join(raw for raw, _ in LINES) + b"\n" + PARTIAL)
    return path


@pytest.mark.parametrize("target", TARGETS)
def test_read_gives_each_lines_metrics_and_says_each_bad_line(target: str,
                                                               hostile: Path) -> None:
    done = run(target, "read", str(hostile))
    assert done.returncode == 0, done.stderr
    records, refusals = expected(hostile.name)
    got = [exact(json.loads(line)) for line in done.stdout.splitlines()]
    assert got == [exact(r) for r in records]
    assert len(got) == 23  # the corpus's good metrics, so the truth is not empty
    problems = done.stderr.decode().splitlines()
    assert len(problems) == len(refusals) + 1
    for problem, (number, reason) in zip(problems, refusals, strict=False):
        assert problem.startswith(f"{hostile}:{number}: {reason}"), (problem, reason)
    assert problems[-1] == f"{hostile}:{len(LINES) + 1}: incomplete last line; not read"


def test_a_bad_name_is_refused_on_every_line_that_holds_it(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    path.write_text("".join(f'{{"step": {i}, "wall_time": 0, "metrics": {{"ok": 1}}}}\n'
                            f'{{"step": {i}, "wall_time": 0, "metrics": {{"bad\\u0001": 1}}}}\n'
                            for i in range(3)))
    done = run("x86_64-unknown-linux-musl", "read", str(path))
    assert [json.loads(line)["step"] for line in done.stdout.splitlines()] == [0, 1, 2]
    assert [p.split(": ")[0] for p in done.stderr.decode().splitlines()] == [
        f"{path}:{n}" for n in (2, 4, 6)]


@pytest.mark.parametrize("target", TARGETS)
def test_refusals_and_exit_statuses(target: str, hostile: Path, tmp_path: Path) -> None:
    missing = run(target, "read", str(tmp_path / "nothing.jsonl"), str(hostile))
    assert missing.returncode == 1
    assert missing.stderr.decode().startswith(
        f"tuneplane-collector read: {tmp_path}/nothing.jsonl: no such file or directory")
    assert len(missing.stdout.splitlines()) == 23  # the other path is still read
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
