-- Read models of the batches topic: the batch ledger and scalar curve chunks.
-- depends:

CREATE TABLE batch_ledger (
    run_id        text        NOT NULL,
    attempt       integer     NOT NULL,
    member        text        NOT NULL,
    batch_id      text        NOT NULL,
    kafka_partition integer   NOT NULL,
    kafka_offset  bigint      NOT NULL,
    points        integer     NOT NULL,
    sealed_at     double precision NOT NULL,
    projected_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (run_id, attempt, member, batch_id)
);

-- One row per (run, attempt, member, source, tag): the raw per-source series.
CREATE TABLE series (
    series_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    run_id    text    NOT NULL,
    attempt   integer NOT NULL,
    member    text    NOT NULL,
    source    text    NOT NULL,
    tag       text    NOT NULL,
    UNIQUE (run_id, attempt, member, source, tag)
);

-- A chunk of points as arrays plus its summary, so a downsampled query can answer
-- from summaries and unpack only the chunks it must.
CREATE TABLE curve_chunks (
    series_id  bigint  NOT NULL REFERENCES series (series_id),
    batch_id   text    NOT NULL,
    chunk_index integer NOT NULL,
    n          integer NOT NULL,
    step_min   bigint  NOT NULL,
    step_max   bigint  NOT NULL,
    v_min      double precision,  -- over finite values; NULL when none is finite
    v_max      double precision,
    v_first    double precision NOT NULL,
    v_last     double precision NOT NULL,
    steps      bigint[] NOT NULL,
    wall_times double precision[] NOT NULL,
    "values"   double precision[] NOT NULL,
    PRIMARY KEY (series_id, batch_id, chunk_index)
);

CREATE INDEX curve_chunks_range ON curve_chunks (series_id, step_min, step_max);
