"""Settings parsed from an injected environment mapping."""

from __future__ import annotations

import pytest

from tuneplane.common.settings import SettingsError, TopicSettings, positive_int, require


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


def test_topic_settings_default_to_one_local_broker_and_follow_production_values() -> None:
    assert TopicSettings.from_environ({}) == TopicSettings(12, 1, 1)
    assert TopicSettings.from_environ({"TUNEPLANE_TOPIC_REPLICATION": "3"}) == \
        TopicSettings(12, 3, 2)
