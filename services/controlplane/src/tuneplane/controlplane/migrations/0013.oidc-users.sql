-- Users signed in through the team's identity provider: made at their first sign-in
-- (origin 'oidc'), their project roles and admin flag following their groups at each.
-- depends: 0012.sign-in

ALTER TABLE public.users ADD COLUMN origin text NOT NULL DEFAULT 'local'
    CHECK (origin IN ('local', 'oidc'));
