-- Hyperparameters and other settings (TensorBoard's HParams plugin, JSONL config records,
-- the integration artifact's static config): each key's latest entry per attempt and
-- member. And each series' summary (its points, finite minimum and maximum, last point),
-- kept as batches are projected, so the runs table shows and sorts by them per run without
-- reading curve chunks.
-- depends: 0033.rich-retention

CREATE TABLE readmodel.run_config (
    run_id    text    NOT NULL,
    attempt   integer NOT NULL,
    member    text    NOT NULL,
    key       text    NOT NULL,
    value     jsonb   NOT NULL,   -- a number, a string or a boolean
    origin    text    NOT NULL,   -- hparams, jsonl, artifact
    source    text    NOT NULL,
    run_path  text    NOT NULL,
    wall_time double precision NOT NULL,
    sealed_at double precision NOT NULL,  -- of the batch that declared it: a later one wins
    PRIMARY KEY (run_id, attempt, member, key)
);

CREATE TABLE readmodel.series_stats (
    series_id      bigint PRIMARY KEY,
    points         bigint NOT NULL,
    v_min          double precision,  -- over finite values; NULL when none is finite
    v_max          double precision,
    step_last      bigint NOT NULL,   -- the last point read: of the latest sealed batch
    v_last         double precision NOT NULL,
    last_sealed_at double precision NOT NULL
);

INSERT INTO readmodel.series_stats (series_id, points, v_min, v_max, step_last, v_last,
                                    last_sealed_at)
SELECT c.series_id, sum(c.n), min(c.v_min), max(c.v_max),
       (array_agg(c.steps[cardinality(c.steps)]
                  ORDER BY l.sealed_at DESC, c.batch_id DESC, c.chunk_index DESC))[1],
       (array_agg(c.v_last ORDER BY l.sealed_at DESC, c.batch_id DESC, c.chunk_index DESC))[1],
       max(l.sealed_at)
FROM readmodel.curve_chunks c
JOIN readmodel.series s USING (series_id)
JOIN readmodel.batch_ledger l ON l.run_id = s.run_id AND l.attempt = s.attempt
                             AND l.member = s.member AND l.batch_id = c.batch_id
GROUP BY c.series_id;
