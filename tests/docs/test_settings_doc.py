"""docs/settings.md is generated from the settings classes (scripts/gen-settings-doc) and
kept current; a variable several deployables read means one thing."""

from __future__ import annotations

import pytest

from scripts.settings_doc import DEPLOYABLES, DOC, render, rows
from tuneplane.contract.settings import Settings, Variable, setting


def test_docs_settings_md_is_current() -> None:
    assert DOC.read_text() == render(), \
        "docs/settings.md is out of date: run scripts/gen-settings-doc"


def test_every_deployables_settings_are_in_the_table() -> None:
    text = DOC.read_text()
    for deployable, settings in DEPLOYABLES.items():
        for row in rows({deployable: settings}):
            assert f"| `{row.variable.name}`" in text


def test_one_variable_declared_twice_with_two_meanings_is_refused() -> None:
    class One(Settings):
        x: str = setting(Variable("T_X", "one meaning"))

    class Two(Settings):
        x: str = setting(Variable("T_X", "another meaning"))

    with pytest.raises(ValueError, match="T_X is declared twice with different meanings"):
        rows({"one": One, "two": Two})


def test_the_table_says_who_needs_what_when_readers_differ() -> None:
    by_name = {row.variable.name: row for row in rows(DEPLOYABLES)}
    assert by_name["TUNEPLANE_DATABASE_URL"].readers["control"][1] == "yes"
    assert by_name["TUNEPLANE_DATABASE_URL"].readers["ingest"][1] == "yes"  # token lookups
    assert by_name["TUNEPLANE_GATEWAY_HOSTNAME"].readers["ingest"][1] == \
        "for the shared gateway identity"
    assert by_name["TUNEPLANE_GATEWAY_HOSTNAME"].readers["admin"] == ("localhost", "no")
