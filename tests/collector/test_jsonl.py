"""The JSONL metric reader: complete lines only, bad lines reported with file and line."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from tuneplane.collector import jsonl
from tuneplane.collector.draft import Position, ReadStep
from tuneplane.collector.jsonl import LineError, parse_line

START = Position()


def read_all(path: Path, position: Position = START, max_points: int = 10_000,
             ) -> ReadStep:
    return jsonl.read(path, "src", position, max_points, max_bytes=1 << 20)


def test_parses_step_wall_time_and_metrics() -> None:
    assert parse_line(b'{"step": 3, "wall_time": 10.5, "metrics": {"loss": 0.25, "n": 2}}') == \
        (3, 10.5, [("loss", 0.25), ("n", 2.0)])


@pytest.mark.parametrize(("text", "expected"), [
    (b'{"step": 1, "wall_time": 1, "metrics": {"x": NaN}}', math.nan),
    (b'{"step": 1, "wall_time": 1, "metrics": {"x": Infinity}}', math.inf),
    (b'{"step": 1, "wall_time": 1, "metrics": {"x": -Infinity}}', -math.inf),
    (b'{"step": 1, "wall_time": 1, "metrics": {"x": "NaN"}}', math.nan),
    (b'{"step": 1, "wall_time": 1, "metrics": {"x": "-inf"}}', -math.inf),
])
def test_non_finite_values_are_kept(text: bytes, expected: float) -> None:
    value = parse_line(text)[2][0][1]
    assert (math.isnan(value) and math.isnan(expected)) or value == expected


@pytest.mark.parametrize(("text", "reason"), [
    (b"garbage", "not JSON"),
    (b"[1, 2]", "not a JSON object"),
    (b'{"step": 1.5, "wall_time": 1, "metrics": {"x": 1}}', "'step' must be a 64-bit integer"),
    (b'{"step": 99999999999999999999, "wall_time": 1, "metrics": {"x": 1}}', "64-bit"),
    (b'{"step": true, "wall_time": 1, "metrics": {"x": 1}}', "'step' must be"),
    (b'{"step": 1, "metrics": {"x": 1}}', "'wall_time' must be a number"),
    (b'{"step": 1, "wall_time": 1, "metrics": {}}', "'metrics' must be a non-empty object"),
    (b'{"step": 1, "wall_time": 1, "metrics": {"x": null}}', "metric 'x' is null"),
    (b'{"step": 1, "wall_time": 1, "metrics": {"x": false}}', "metric 'x' is false"),
    (b'{"step": 1, "wall_time": 1, "metrics": {"x": "high"}}', "metric 'x' is 'high'"),
    (b'{"step": 1, "wall_time": 1, "metrics": {"": 1}}', "metric name"),
    (b'{"step": 1, "wall_time": 1, "metrics": {"\\ud800": 1}}', "a lone surrogate"),
    (b'{"step": 1, "wall_time": 1, "metrics": {"x": 1' + b"0" * 400 + b'}}',
     "metric 'x' is an integer too large for a float"),
    (b'{"step": 1, "wall_time": 1' + b"0" * 400 + b', "metrics": {"x": 1}}',
     "'wall_time' must be a number of seconds, got an integer too large"),
    (b'{"step": 1, "wall_time": 1, "metrics": {"x": NaN}, "deep": ' + b"[" * 100_000
     + b"]" * 100_000 + b"}", "not JSON"),
    (b'{"step": 1, "wall_time": 1, "metrics": {"x": "\\udfff", "y": NaN}}', "lone surrogate"),
])
def test_malformed_lines_are_refused_with_a_reason(text: bytes, reason: str) -> None:
    with pytest.raises(LineError, match=reason):
        parse_line(text)


def test_a_lone_surrogate_is_one_bad_line_and_reading_goes_on(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    path.write_bytes(b'{"step": 1, "wall_time": 1, "metrics": {"\\ud800": 1}}\n'
                     b'{"step": 2, "wall_time": 1, "metrics": {"x": 2}}\n')
    read = read_all(path)
    assert read.problems == [f"{path}:1: not JSON: a lone surrogate '\\ud800' is not text"]
    assert read.draft.series["x"].steps == [2]


def test_partial_last_line_is_waited_for_then_read(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    path.write_bytes(b'{"step": 1, "wall_time": 1, "metrics": {"x": 1}}\n{"step": 2, "wall')
    first = read_all(path)
    assert first.draft.points == 1
    assert first.position == Position(len(b'{"step": 1, "wall_time": 1, "metrics": {"x": 1}}\n'),
                                      2)
    with path.open("ab") as out:
        out.write(b'_time": 2, "metrics": {"x": 2}}\n')
    second = read_all(path, first.position)
    assert second.draft.series["x"].steps == [2]
    assert second.at_end


def test_bad_line_is_reported_with_file_and_line_and_reading_goes_on(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    path.write_text('{"step": 1, "wall_time": 1, "metrics": {"x": 1}}\n\n{broken\n'
                    '{"step": 3, "wall_time": 3, "metrics": {"x": 3}}\n')
    result = read_all(path)
    assert result.draft.series["x"].steps == [1, 3]
    assert len(result.problems) == 1
    assert result.problems[0].startswith(f"{path}:3: not JSON")
    assert result.position.line == 5


def test_reading_stops_at_the_point_bound_on_a_line_boundary(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    path.write_text("".join(f'{{"step": {i}, "wall_time": 0, "metrics": {{"a": 1, "b": 2}}}}\n'
                            for i in range(10)))
    first = read_all(path, max_points=5)
    assert first.draft.points == 4
    assert not first.at_end
    rest = read_all(path, first.position, max_points=100)
    assert rest.draft.points == 16
    assert rest.draft.series["a"].steps == list(range(2, 10))


def test_a_line_over_the_batch_bound_is_reported_not_looped_on(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    path.write_text('{"step": 1, "wall_time": 0, "metrics": {"a": 1, "b": 2, "c": 3}}\n')
    result = read_all(path, max_points=2)
    assert result.draft.points == 0
    assert "over the bounds of one batch" in result.problems[0]
    assert result.position.line == 2


def test_a_line_longer_than_a_read_is_skipped_once_its_end_is_written(tmp_path: Path) -> None:
    from tuneplane.collector.draft import Position
    from tuneplane.collector.jsonl import READ_BYTES, read
    path = tmp_path / "m.jsonl"
    path.write_bytes(b'{"step": 1, "wall_time": 1, "metrics": {"a": 1}}\n{"pad": "'
                     + b"x" * READ_BYTES)
    got = read(path, "s", Position(), 1000, 1 << 20)
    assert got.draft.points == 1
    waiting = read(path, "s", got.position, 1000, 1 << 20)
    assert waiting.at_end
    assert waiting.position == got.position
    with path.open("ab") as out:
        out.write(b'"}\n{"step": 3, "wall_time": 1, "metrics": {"a": 3}}\n')
    skipped = read(path, "s", got.position, 1000, 1 << 20)
    assert skipped.problems == [f"{path}:2: line of {READ_BYTES + 11} bytes, over the "
                                f"{READ_BYTES} byte bound; skipped"]
    after = read(path, "s", skipped.position, 1000, 1 << 20)
    assert after.draft.points == 1


def test_lines_past_the_first_read_are_read_in_the_same_step(tmp_path: Path) -> None:
    """The first read is sized to the batch; long lines make it read on, up to a read's
    worth, with nothing skipped or reported."""
    path = tmp_path / "m.jsonl"
    long_line = b'{"step": 0, "wall_time": 0, "note": "' + b"x" * 200_000 + \
        b'", "metrics": {"a": 0}}\n'
    path.write_bytes(long_line + b"".join(
        b'{"step": %d, "wall_time": 0, "metrics": {"a": %d}}\n' % (i, i) for i in range(1, 4)))
    result = read_all(path, max_points=10)
    assert (result.problems, result.at_end) == ([], True)
    assert result.draft.series["a"].steps == [0, 1, 2, 3]
    assert result.position.offset == path.stat().st_size


def test_a_bad_name_is_refused_on_every_line_that_holds_it(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    path.write_text("".join(f'{{"step": {i}, "wall_time": 0, "metrics": {{"ok": 1}}}}\n'
                            f'{{"step": {i}, "wall_time": 0, "metrics": {{"bad\\u0001": 1}}}}\n'
                            for i in range(3)))
    result = read_all(path)
    assert result.draft.series["ok"].steps == [0, 1, 2]
    assert [p.split(": ")[0] for p in result.problems] == [f"{path}:{n}" for n in (2, 4, 6)]
