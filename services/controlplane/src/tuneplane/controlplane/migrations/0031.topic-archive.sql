-- The batches topic's archive: sealed ranges of each partition written to the object store
-- as Parquet segments (`tuneplane-projector archive`), below which the topic may be trimmed.
-- Replay and rebuild read a partition's archive below Kafka's log start, then Kafka.
-- depends: 0030.retention

CREATE TABLE public.topic_archive (
    topic        text    NOT NULL,
    partition    integer NOT NULL,
    first_offset bigint  NOT NULL,
    last_offset  bigint  NOT NULL CHECK (last_offset >= first_offset),
    object_key   text    NOT NULL,
    records      integer NOT NULL,
    bytes        bigint  NOT NULL,
    archived_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (topic, partition, first_offset)
);
