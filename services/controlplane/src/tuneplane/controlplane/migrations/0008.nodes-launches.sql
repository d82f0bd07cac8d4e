-- Node control: enrolled nodes, their one-time enrollment tokens (kept as sha256 only)
-- and launches assigned to them (one member of one attempt each).
-- depends: 0007.runs

CREATE TABLE public.nodes (
    node_id     text PRIMARY KEY,
    name        text NOT NULL UNIQUE,
    hostname    text NOT NULL DEFAULT '',
    enrolled_at timestamptz NOT NULL DEFAULT now(),
    last_seen   timestamptz,
    revoked_at  timestamptz
);

CREATE TABLE public.enrollment_tokens (
    token_sha256 bytea PRIMARY KEY,
    node_name    text NOT NULL,
    created_by   text NOT NULL,
    expires_at   timestamptz NOT NULL,
    used_at      timestamptz,
    node_id      text REFERENCES public.nodes (node_id)
);

CREATE TABLE public.launches (
    launch_id    bigserial PRIMARY KEY,
    run_id       text NOT NULL,
    attempt      integer NOT NULL,
    member       text NOT NULL,
    node_id      text NOT NULL REFERENCES public.nodes (node_id),
    command      jsonb NOT NULL,
    environment  jsonb NOT NULL DEFAULT '{}',
    state        text NOT NULL DEFAULT 'pending'
                 CHECK (state IN ('pending', 'delivered', 'running', 'finished', 'failed',
                                  'refused')),
    exit_code    integer,
    detail       text NOT NULL DEFAULT '',
    undelivered  bigint NOT NULL DEFAULT 0,
    created_at   timestamptz NOT NULL DEFAULT now(),
    delivered_at timestamptz,
    ended_at     timestamptz,
    FOREIGN KEY (run_id, attempt) REFERENCES public.attempts (run_id, attempt),
    UNIQUE (run_id, attempt, member)
);

CREATE INDEX launches_pending ON public.launches (node_id) WHERE state = 'pending';
