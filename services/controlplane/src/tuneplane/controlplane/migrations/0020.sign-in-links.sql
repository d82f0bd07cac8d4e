-- One-time sign-in links: an admin's command (`tuneplane-admin sign-in-link`, which the demo
-- runs) makes one; the web service redeems it once, within minutes, for a browser session.
-- Only the link's digest is kept, so the table never holds a usable credential.
-- depends: 0019.slurm-launches

CREATE TABLE public.sign_in_links (
    link_digest bytea PRIMARY KEY,
    username    text NOT NULL REFERENCES public.users (username) ON DELETE CASCADE,
    next_path   text NOT NULL CHECK (length(next_path) BETWEEN 1 AND 2048),
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL,
    used_at     timestamptz
);
CREATE INDEX sign_in_links_by_user ON public.sign_in_links (username);
