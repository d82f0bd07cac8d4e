-- Deletions of runs and attempts: who asked, when, and what (attempt 0: the whole run).
-- A deletion hides its data at once and removes it once its undo window ends
-- (`purge_after`): the projector's purge deletes its read-model rows and sweeps the rich
-- records' objects no other record references. Not a projection of the topic: it stays
-- in public and survives rebuilds, and every projection of the topic (the live projector,
-- replay, redrive, rebuild) skips the batches of a deletion being purged, so nothing brings
-- it back. Ingest refuses the workload tokens of a deleted attempt.
-- depends: 0028.kubernetes-events

CREATE TABLE public.deletions (
    deletion_id      bigserial PRIMARY KEY,
    run_id           text NOT NULL,
    project          text NOT NULL,                           -- the run's, when deleted
    attempt          integer NOT NULL CHECK (attempt >= 0),   -- 0: every attempt
    deleted_by       text NOT NULL,
    deleted_at       timestamptz NOT NULL DEFAULT now(),
    purge_after      timestamptz NOT NULL,
    undone_by        text,
    undone_at        timestamptz,
    purge_started_at timestamptz,
    purged_at        timestamptz,
    CHECK (undone_at IS NULL OR purge_started_at IS NULL)
);
-- One standing deletion per run and attempt.
CREATE UNIQUE INDEX deletions_standing ON public.deletions (run_id, attempt)
    WHERE undone_at IS NULL;

-- Objects whose last reference a purge removed: swept (deleted from the store) once no
-- rich record references them.
CREATE TABLE public.object_sweep (
    object_key text PRIMARY KEY,
    since      timestamptz NOT NULL DEFAULT now()
);
