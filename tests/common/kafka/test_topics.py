"""Topic settings: explicit, from an injected environment."""

from __future__ import annotations

from tuneplane.common.kafka.topics import TopicSettings


def test_topic_settings_default_to_one_local_broker_and_follow_production_values() -> None:
    assert TopicSettings.from_environ({}) == TopicSettings(12, 1, 1)
    assert TopicSettings.from_environ({"TUNEPLANE_TOPIC_REPLICATION": "3"}) == \
        TopicSettings(12, 3, 2)
