"""Bounds of the telemetry/v1 contract, shared by the collector (which seals within them)
and ingest (which rejects batches beyond them)."""

from typing import Final

#: Points (sum over all chunks) one batch may carry.
MAX_BATCH_POINTS: Final = 50_000
#: Serialized size of one ``Batch`` message; well below the batches topic's max.message.bytes.
MAX_BATCH_BYTES: Final = 4 * 1024 * 1024
#: Longest source id, tag, run id or member name, in UTF-8 bytes.
MAX_NAME_BYTES: Final = 512
#: max.message.bytes set explicitly on the batches topic (batch + Kafka record overhead).
TOPIC_MAX_MESSAGE_BYTES: Final = 8 * 1024 * 1024
