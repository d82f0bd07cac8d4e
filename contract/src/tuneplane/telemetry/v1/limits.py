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
#: Rich records, and TensorBoard restart markers, one batch may carry.
MAX_BATCH_RICH: Final = 5_000
MAX_BATCH_SESSION_STARTS: Final = 5_000
#: Config entries (hyperparameters) one batch may carry, and the longest text value, in
#: UTF-8 bytes. The read models keep at most MAX_CONFIG_KEYS keys per attempt and member;
#: the collector stops declaring new keys of a source past it, and says so.
MAX_BATCH_CONFIG: Final = 1_000
MAX_CONFIG_TEXT_BYTES: Final = 4_096
MAX_CONFIG_KEYS: Final = 1_000
#: Longest TensorBoard run path (a series chunk's ``run_path``), in UTF-8 bytes: a name's
#: bound, so the series table's unique key (five names and the run path) stays within what
#: a PostgreSQL index entry holds.
MAX_RUN_PATH_BYTES: Final = MAX_NAME_BYTES
#: Distinct (source, run path, tag) series one batch may carry: one job cannot flood the
#: series table a batch at a time. The collector seals a batch before it would hold more.
MAX_BATCH_SERIES: Final = 2_000
#: Longest file path (relative to its source root) or plugin name a record names.
MAX_PATH_BYTES: Final = 4_096
#: Longest reader state a batch's source position carries (JSON, UTF-8 bytes); the
#: collector leaves the position out of a batch whose state is longer.
MAX_POSITION_STATE_BYTES: Final = 256 * 1024
#: Longest file a source position names (relative to its source root, UTF-8 bytes): part
#: of the checkpoint row's key, which a PostgreSQL index entry must hold with the names.
MAX_POSITION_FILE_BYTES: Final = 1024
#: What PostgreSQL's columns hold: attempts are ``integer``, offsets ``bigint``.
MAX_ATTEMPT: Final = 2**31 - 1
MAX_OFFSET: Final = 2**63 - 1
