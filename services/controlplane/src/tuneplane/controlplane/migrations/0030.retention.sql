-- Retention per project: runs are kept `keep_runs_days` days after they end (their last
-- attempt's end; a run with no attempt, its creation; a run known by its telemetry only,
-- its last batch), then deleted as an owner's deletion is, by `retention`
-- (`tuneplane-admin retention`, from a schedule), and purged after the undo window.
-- NULL: kept until deleted.
-- depends: 0029.deletions

ALTER TABLE public.projects ADD COLUMN keep_runs_days integer
    CHECK (keep_runs_days IS NULL OR keep_runs_days > 0);
