-- Rich records kept a while per project: a project that keeps them `keep_rich_days` days
-- has each run's rich records (images, audio, histograms, text) expired that long after
-- the run ended, by retention (`tuneplane-admin retention`); its curves stay. Like a
-- deletion, an expiry is not a projection of the topic: from its purge's start every
-- projection of the topic (live, replay, redrive, rebuild) leaves the run's rich records
-- out, the purge deletes their rows, sweeps the objects no other record references and
-- strips them from the topic's archive. Until its purge starts an expiry is taken back
-- when the project's setting changes (retention expires again what is then due).
-- depends: 0032.archive-prune

ALTER TABLE public.projects ADD COLUMN keep_rich_days integer
    CHECK (keep_rich_days IS NULL OR keep_rich_days > 0);

CREATE TABLE public.rich_expiries (
    run_id            text PRIMARY KEY,
    project           text NOT NULL,                 -- the run's, when expired
    -- Its attempts up to this one (the last there was): a later attempt's rich records
    -- are not expired with them.
    attempt_upto      integer NOT NULL,
    expired_at        timestamptz NOT NULL DEFAULT now(),
    purge_after       timestamptz NOT NULL,
    purge_started_at  timestamptz,
    purged_at         timestamptz,
    archive_pruned_at timestamptz
);
