-- Export turns on for the whole fleet when the first destination is created: each such
-- moment is an export epoch. An exporter group records the epoch it started at, so a
-- restarted exporter resumes from its committed offsets (nothing skipped) while a new
-- epoch starts at the topic's end (no backlog from while export was off).
-- depends: 0009.destinations

ALTER TABLE public.destinations_state ADD COLUMN export_epoch bigint NOT NULL DEFAULT 0;

CREATE TABLE public.exporter_groups (
    group_id     text PRIMARY KEY,
    export_epoch bigint NOT NULL
);
