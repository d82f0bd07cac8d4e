-- Sign-in: personal API tokens (each user token names its row by its jti: listed, revocable,
-- expiring, optionally scoped to projects), browser sessions (the cookie's digest; a
-- CSRF token per session) and local passwords (argon2 hashes). Disabling a user ends its
-- sessions and tokens at once: every request reads its row.
-- depends: 0011.projects

CREATE TABLE public.api_tokens (
    token_id     text PRIMARY KEY,
    username     text NOT NULL REFERENCES public.users (username) ON DELETE CASCADE,
    name         text NOT NULL CHECK (length(name) BETWEEN 1 AND 128),
    projects     text[],  -- NULL: every project the user holds a role in (and admin rights)
    created_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL,
    revoked_at   timestamptz,
    last_used_at timestamptz
);
CREATE INDEX api_tokens_by_user ON public.api_tokens (username, created_at);

CREATE TABLE public.sessions (
    session_digest bytea PRIMARY KEY,
    username       text NOT NULL REFERENCES public.users (username) ON DELETE CASCADE,
    csrf_token     text NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    expires_at     timestamptz NOT NULL,
    ended_at       timestamptz
);
CREATE INDEX sessions_by_user ON public.sessions (username);

ALTER TABLE public.users ADD COLUMN password_hash text;
