-- The HTTP reporting path (TUNEPLANE_INGEST_URL): lifecycle events, log lines and reports
-- posted by SDK users. Each post carries an id, so a retried post is stored once.
-- depends: 0004.chunk-segments

CREATE TABLE public.attempt_events (
    run_id text NOT NULL, attempt integer NOT NULL, member text NOT NULL, id text NOT NULL,
    event text NOT NULL, at double precision NOT NULL, detail jsonb NOT NULL,
    received_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (run_id, attempt, member, id)
);

CREATE TABLE public.attempt_logs (
    run_id text NOT NULL, attempt integer NOT NULL, member text NOT NULL, id text NOT NULL,
    line_no integer NOT NULL, at double precision NOT NULL, level text NOT NULL,
    message text NOT NULL,
    PRIMARY KEY (run_id, attempt, member, id, line_no)
);

CREATE TABLE public.attempt_reports (
    run_id text NOT NULL, attempt integer NOT NULL, member text NOT NULL, id text NOT NULL,
    name text NOT NULL, body jsonb NOT NULL, received_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (run_id, attempt, member, id)
);
