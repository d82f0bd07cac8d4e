-- Users of the web API; a user token is honoured only while its user exists.
-- depends: 0002.readmodel-schema

CREATE TABLE public.users (
    username   text PRIMARY KEY CHECK (username ~ '^[A-Za-z0-9._@-]{1,128}$'),
    is_admin   boolean NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL DEFAULT now()
);
