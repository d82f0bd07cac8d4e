-- Runs and their attempts as the control plane manages them: a run holds its integration
-- artifact; each attempt freezes the artifact's metric mapping when it starts.
-- depends: 0006.gateway-identity

CREATE TABLE public.runs (
    run_id     text PRIMARY KEY CHECK (run_id ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$'),
    artifact   jsonb NOT NULL,
    created_by text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE public.attempts (
    run_id     text NOT NULL REFERENCES public.runs (run_id),
    attempt    integer NOT NULL CHECK (attempt >= 1),
    state      text NOT NULL CHECK (state IN ('running', 'finished', 'failed', 'cancelled')),
    started_at timestamptz NOT NULL DEFAULT now(),
    ended_at   timestamptz,
    PRIMARY KEY (run_id, attempt)
);
