-- Read models move into their own schema, so a rebuild can fill a fresh copy and swap it in.
-- Rich records (bytes in S3) and TensorBoard restart markers join them.
-- depends: 0001.initial

CREATE SCHEMA readmodel;
ALTER TABLE batch_ledger SET SCHEMA readmodel;
ALTER TABLE series SET SCHEMA readmodel;
ALTER TABLE curve_chunks SET SCHEMA readmodel;

CREATE TABLE readmodel.rich_records (
    run_id      text    NOT NULL,
    attempt     integer NOT NULL,
    member      text    NOT NULL,
    batch_id    text    NOT NULL,
    record_index integer NOT NULL,
    source      text    NOT NULL,
    tag         text    NOT NULL,
    step        bigint  NOT NULL,
    wall_time   double precision NOT NULL,
    kind        text    NOT NULL,
    plugin_name text    NOT NULL,
    plugin_content bytea NOT NULL,
    file        text    NOT NULL,
    file_offset bigint  NOT NULL,
    object_key  text    NOT NULL,   -- content-addressed: rich/sha256/<digest>
    bytes       integer NOT NULL,
    PRIMARY KEY (run_id, attempt, member, batch_id, record_index)
);
CREATE INDEX rich_records_by_tag ON readmodel.rich_records (run_id, attempt, member, source, tag, step);

CREATE TABLE readmodel.session_starts (
    run_id    text    NOT NULL,
    attempt   integer NOT NULL,
    member    text    NOT NULL,
    batch_id  text    NOT NULL,
    marker_index integer NOT NULL,
    source    text    NOT NULL,
    file      text    NOT NULL,
    file_offset bigint NOT NULL,
    step      bigint  NOT NULL,
    wall_time double precision NOT NULL,
    PRIMARY KEY (run_id, attempt, member, batch_id, marker_index)
);

-- The metric mapping of an attempt, frozen when the attempt starts: not a projection of the
-- topic, so it stays in public and survives rebuilds.
CREATE TABLE public.attempt_mappings (
    run_id    text    NOT NULL,
    attempt   integer NOT NULL,
    mapping   jsonb   NOT NULL,
    frozen_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (run_id, attempt)
);

-- Every new session finds the read models first.
DO $$ BEGIN
    EXECUTE format('ALTER DATABASE %I SET search_path = readmodel, public', current_database());
END $$;
