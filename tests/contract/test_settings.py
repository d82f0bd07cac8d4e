"""Settings declared once per class, parsed from an injected mapping; errors name variables."""

from __future__ import annotations

from pathlib import Path

import pytest

from tuneplane.contract.parsers import positive
from tuneplane.contract.settings import (
    Described,
    Needed,
    Settings,
    SettingsError,
    Variable,
    describe,
    needed,
    positive_int,
    require,
    section,
    setting,
)

SHARED = Variable("T_URL", "where it is", secret=True)


class Piece(Settings):
    replication: int = setting("T_REPLICATION", help="copies", parse=positive, default=1)
    in_sync: int = setting("T_IN_SYNC", help="copies in sync", parse=positive,
                           shown="min(2, T_REPLICATION)",
                           derive=lambda earlier: min(2, earlier["replication"]))


class Example(Settings):
    url: str = setting(SHARED)
    count: int = setting("T_COUNT", help="how many", parse=positive, default=16)
    root: Path | None = setting("T_ROOT", help="a directory", parse=Path, default=None)
    token: Needed[str] = needed("T_TOKEN", help="a token", needed_for=("issue", "renew"))
    piece: Piece = section(Piece)
    cap: int = 100  # not from the environment


def test_values_are_parsed_and_defaults_apply() -> None:
    made = Example.from_environ({"T_URL": " db://x ", "T_COUNT": "7", "T_ROOT": "/r",
                                 "T_REPLICATION": "3"})
    assert made == Example(url="db://x", count=7, root=Path("/r"), token=Needed("T_TOKEN"),
                           piece=Piece(replication=3, in_sync=2))
    assert made.cap == 100
    assert Example.from_environ({"T_URL": "u"}).count == 16


def test_a_blank_value_counts_as_unset() -> None:
    made = Example.from_environ({"T_URL": "u", "T_COUNT": "", "T_ROOT": "  ", "T_TOKEN": ""})
    assert (made.count, made.root, made.token.value) == (16, None, None)


def test_a_missing_required_setting_is_named() -> None:
    with pytest.raises(SettingsError, match=r"^T_URL is not set; `scripts/services env`") as e:
        Example.from_environ({})
    assert e.value.names == ("T_URL",)


def test_malformed_numbers_are_named_with_the_value() -> None:
    with pytest.raises(SettingsError, match=r"^T_COUNT must be a whole number, got 'x'$"):
        Example.from_environ({"T_URL": "u", "T_COUNT": "x"})
    with pytest.raises(SettingsError, match=r"^T_COUNT must be positive, got 0$"):
        Example.from_environ({"T_URL": "u", "T_COUNT": "0"})


def test_every_problem_is_reported_at_once_sections_included() -> None:
    with pytest.raises(SettingsError) as caught:
        Example.from_environ({"T_COUNT": "-1", "T_REPLICATION": "many"})
    assert caught.value.names == ("T_URL", "T_COUNT", "T_REPLICATION")
    assert str(caught.value) == (
        "T_URL is not set; T_COUNT must be positive, got -1; T_REPLICATION must be a whole "
        "number, got 'many'; `scripts/services env` prints local values")


def test_a_needed_setting_is_required_only_when_asked_for() -> None:
    made = Example.from_environ({"T_URL": "u"})
    with pytest.raises(SettingsError, match=r"^T_TOKEN is not set") as caught:
        made.token.get()
    assert caught.value.names == ("T_TOKEN",)
    assert Example.from_environ({"T_URL": "u", "T_TOKEN": "t"}).token.get() == "t"


def test_secrets_stay_out_of_reprs() -> None:
    made = Example.from_environ({"T_URL": "postgresql://user:hunter2@db", "T_TOKEN": "s3cr3t"})
    assert "hunter2" not in repr(made)
    assert "s3cr3t" not in repr(made)
    assert repr(made.token) == "Needed('T_TOKEN', set)"


def test_a_parse_error_from_a_custom_parser_reads_after_the_name() -> None:
    def even(raw: str) -> int:
        if int(raw) % 2:
            raise ValueError(f"must be even, got {raw}")
        return int(raw)

    class Even(Settings):
        n: int = setting("T_N", help="an even number", parse=even, default=2)

    assert Even.from_environ({"T_N": "4"}).n == 4
    with pytest.raises(SettingsError, match=r"^T_N must be even, got 3$"):
        Even.from_environ({"T_N": "3"})


def test_a_shared_variable_is_declared_once() -> None:
    with pytest.raises(TypeError, match="declared once"):
        setting(SHARED, help="another meaning")
    with pytest.raises(TypeError, match="needs help"):
        setting("T_UNEXPLAINED")


def test_describe_lists_every_variable_with_its_default_and_requirement() -> None:
    rows = {d.variable.name: d for d in describe(Example)}
    assert list(rows) == ["T_URL", "T_COUNT", "T_ROOT", "T_TOKEN", "T_REPLICATION",
                          "T_IN_SYNC"]
    assert rows["T_URL"] == Described(SHARED, "", required=True)
    assert (rows["T_COUNT"].default, rows["T_COUNT"].requirement) == ("16", "no")
    assert (rows["T_ROOT"].default, rows["T_ROOT"].requirement) == ("", "no")
    assert rows["T_TOKEN"].requirement == "for issue, renew"
    assert (rows["T_IN_SYNC"].default, rows["T_IN_SYNC"].requirement) == ("", "no")
    assert rows["T_IN_SYNC"].shown == "min(2, T_REPLICATION)"


def test_what_a_run_of_a_deployable_needs() -> None:
    rows = {d.variable.name: d for d in describe(Example)}
    assert {name for name, d in rows.items() if d.needed_by({"issue"})} == {"T_URL", "T_TOKEN"}
    assert {name for name, d in rows.items() if d.needed_by({"list"})} == {"T_URL"}


def test_the_single_variable_readers_keep_their_messages() -> None:
    with pytest.raises(SettingsError, match="TUNEPLANE_DATABASE_URL is not set"):
        require({}, "TUNEPLANE_DATABASE_URL")
    assert require({"N": " v "}, "N") == "v"
    assert positive_int({"N": "7"}, "N", 1) == 7
    assert positive_int({}, "N", 3) == 3
    assert positive_int({"N": " "}, "N", 3) == 3
    with pytest.raises(SettingsError, match="N must be a whole number, got 'x'"):
        positive_int({"N": "x"}, "N", 1)
    with pytest.raises(SettingsError, match="N must be positive"):
        positive_int({"N": "0"}, "N", 1)


class Keyed(Settings):
    key: int = setting("T_KEY", help="a numeric secret", parse=positive, secret=True)


def test_a_malformed_secret_is_named_but_its_value_is_not_shown() -> None:
    with pytest.raises(SettingsError) as caught:
        Keyed.from_environ({"T_KEY": "hunter2-do-not-print"})
    assert "T_KEY is malformed" in str(caught.value)
    assert "hunter2" not in str(caught.value)
