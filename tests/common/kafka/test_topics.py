"""Topic settings: explicit, from an injected environment."""

from __future__ import annotations

import pytest

from tuneplane.common.kafka.topics import TopicSettings
from tuneplane.contract.settings import SettingsError


def test_topic_settings_default_to_one_local_broker_and_follow_production_values() -> None:
    assert TopicSettings.from_environ({}) == \
        TopicSettings(partitions=12, replication=1, min_insync=1)
    assert TopicSettings.from_environ({"TUNEPLANE_TOPIC_REPLICATION": "3"}) == \
        TopicSettings(partitions=12, replication=3, min_insync=2)
    assert TopicSettings.from_environ({"TUNEPLANE_TOPIC_REPLICATION": "3",
                                       "TUNEPLANE_TOPIC_MIN_INSYNC": "3"}).min_insync == 3


def test_a_malformed_topic_setting_is_named() -> None:
    with pytest.raises(SettingsError, match="TUNEPLANE_TOPIC_PARTITIONS must be positive"):
        TopicSettings.from_environ({"TUNEPLANE_TOPIC_PARTITIONS": "0"})
