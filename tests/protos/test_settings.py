"""Settings parsed from an injected environment mapping."""

from __future__ import annotations

import pytest

from tuneplane.contract.settings import SettingsError, positive_int, require


def test_required_setting_missing_is_named() -> None:
    with pytest.raises(SettingsError, match="TUNEPLANE_DATABASE_URL is not set"):
        require({}, "TUNEPLANE_DATABASE_URL")


def test_whole_numbers_are_checked() -> None:
    assert positive_int({"N": "7"}, "N", 1) == 7
    assert positive_int({}, "N", 3) == 3
    with pytest.raises(SettingsError, match="N must be a whole number, got 'x'"):
        positive_int({"N": "x"}, "N", 1)
    with pytest.raises(SettingsError, match="N must be positive"):
        positive_int({"N": "0"}, "N", 1)

