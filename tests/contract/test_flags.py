"""A setting with a flag: one declaration gives both; the flag, given, replaces the variable,
through the same parser, and a bad flag is reported by its name."""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable

import pytest

from tuneplane.contract import flags
from tuneplane.contract.parsers import nice_increment, positive, rate, seconds, seconds_or_zero
from tuneplane.contract.settings import Settings, SettingsError, describe, section, setting


class Inner(Settings):
    check: float = setting("T_CHECK", help="how often", parse=seconds, default=60.0,
                           flag="--check-seconds")


class Serve(Settings):
    url: str = setting("T_URL", help="where")
    calls: int = setting("T_CALLS", help="calls at once, 100% of them", parse=positive,
                         default=64, flag="--max-calls")
    quiet: int = setting("T_QUIET", help="no flag", parse=positive, default=1)
    inner: Inner = section(Inner)


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="serve")
    p.add_argument("--max-calls-old", help="the CLI's own flag, untouched")
    flags.add_to(p, Serve)
    return p.parse_args(argv)


def test_a_flag_replaces_its_variable_and_the_variable_its_default() -> None:
    env = {"T_URL": "u", "T_CALLS": "8", "T_CHECK": "5"}
    assert flags.settings(Serve, env, parse([])) == Serve(url="u", calls=8, quiet=1,
                                                          inner=Inner(check=5.0))
    got = flags.settings(Serve, env, parse(["--max-calls", "3", "--check-seconds", "0.5"]))
    assert (got.calls, got.inner.check) == (3, 0.5)
    assert flags.settings(Serve, {"T_URL": "u"}, parse([])).calls == 64


def test_a_malformed_flag_is_named_as_the_flag() -> None:
    with pytest.raises(SettingsError) as caught:
        flags.settings(Serve, {"T_URL": "u", "T_CALLS": "0"}, parse(["--check-seconds", "x"]))
    assert str(caught.value) == ("T_CALLS must be positive, got 0; --check-seconds must be a "
                                 "number of seconds, got 'x'")
    assert caught.value.names == ("T_CALLS", "--check-seconds")


def test_only_flagged_settings_become_flags_with_their_help() -> None:
    p = argparse.ArgumentParser(prog="serve")
    flags.add_to(p, Serve)
    text = p.format_help()
    assert "--max-calls" in text
    assert "--check-seconds" in text
    assert "T_QUIET" not in text
    assert "calls at once, 100% of them (or T_CALLS; default 64)" in " ".join(text.split())
    assert [d.flag for d in describe(Serve)] == ["", "--max-calls", "", "--check-seconds"]


def test_a_flag_must_look_like_one() -> None:
    with pytest.raises(TypeError, match="a flag starts with --"):
        setting("T_X", help="x", flag="-x")


@pytest.mark.parametrize(("parser", "raw", "value"), [
    (seconds, "2", 2.0), (seconds, "0.25", 0.25), (rate, "0", 0.0), (rate, "7.5", 7.5),
    (nice_increment, "0", 0), (nice_increment, "19", 19)])
def test_the_parsers_take(parser: Callable[[str], float], raw: str, value: float) -> None:
    assert parser(raw) == value


@pytest.mark.parametrize(("parser", "raw", "why"), [
    (seconds, "0", "must be a positive number of seconds, got 0"),
    (seconds, "nan", "must be a positive number of seconds, got nan"),
    (seconds, "inf", "must be a positive number of seconds, got inf"),
    (rate, "-1", "must be 0 (no limit) or a positive number per second, got -1"),
    (rate, "fast", "must be a number per second, got 'fast'"),
    (seconds_or_zero, "-0.5", "must be 0 (none) or a positive number of seconds, got -0.5"),
    (seconds_or_zero, "inf", "must be 0 (none) or a positive number of seconds, got inf"),
    (nice_increment, "20", "must be from 0 to 19, got 20"),
    (nice_increment, "1.5", "must be a whole number from 0 to 19, got '1.5'")])
def test_the_parsers_refuse_saying_why(parser: Callable[[str], float], raw: str,
                                       why: str) -> None:
    with pytest.raises(ValueError, match=re.escape(why) + "$"):
        parser(raw)
