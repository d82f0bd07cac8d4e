-- Slurm launches: a run's attempt submitted as one batch job (nodes x tasks per node, each
-- task a member), and the collectors of its nodes. An attempt may now wait in a queue
-- (pending) and end as the scheduler ends it (timeout; preempted, when its job is requeued
-- or preempted: a requeued job's next start is the next attempt).
-- depends: 0018.chunk-arrays-lz4

ALTER TABLE public.attempts DROP CONSTRAINT attempts_state_check;
ALTER TABLE public.attempts ADD CONSTRAINT attempts_state_check
    CHECK (state IN ('pending', 'running', 'finished', 'failed', 'cancelled', 'timeout',
                     'preempted'));

CREATE TABLE public.slurm_launches (
    launch_id      bigserial PRIMARY KEY,
    run_id         text NOT NULL REFERENCES public.runs (run_id),
    attempt        integer NOT NULL,          -- the attempt of its latest start
    nodes          integer NOT NULL CHECK (nodes BETWEEN 1 AND 4096),
    tasks_per_node integer NOT NULL CHECK (tasks_per_node BETWEEN 1 AND 1024),
    member_template text NOT NULL DEFAULT 'rank-{rank}', -- task of rank N: {rank} = N
    command        jsonb NOT NULL,
    environment    jsonb NOT NULL DEFAULT '{}',
    options        jsonb NOT NULL DEFAULT '{}', -- partition, time limit, working directory…
    spool_root     text NOT NULL,
    -- queued: not yet submitted; submitting: sbatch under way; submitted: Slurm has it;
    -- ended: its job ended (or could not be submitted)
    state          text NOT NULL DEFAULT 'queued'
                   CHECK (state IN ('queued', 'submitting', 'submitted', 'ended')),
    job_id         text,
    job_state      text NOT NULL DEFAULT '',  -- Slurm's, as last seen
    restarts       integer NOT NULL DEFAULT 0,
    detail         text NOT NULL DEFAULT '',
    created_at     timestamptz NOT NULL DEFAULT now(),
    submitted_at   timestamptz,
    ended_at       timestamptz,
    FOREIGN KEY (run_id, attempt) REFERENCES public.attempts (run_id, attempt)
);

CREATE INDEX slurm_launches_live ON public.slurm_launches (launch_id) WHERE state <> 'ended';
CREATE INDEX slurm_launches_run ON public.slurm_launches (run_id);

-- One row per node of each start of the job: its collector redeemed the start's one-time
-- ticket (or refused to run), and how its drain ended.
CREATE TABLE public.slurm_collectors (
    launch_id    bigint NOT NULL REFERENCES public.slurm_launches (launch_id),
    restart      integer NOT NULL CHECK (restart >= 0),
    node_index   integer NOT NULL CHECK (node_index >= 0),
    attempt      integer NOT NULL,
    hostname     text NOT NULL DEFAULT '',
    redeemed_at  timestamptz NOT NULL DEFAULT now(),
    refused      text,                         -- why it did not run (spool place, artifact)
    reported_at  timestamptz,
    undelivered  bigint,                       -- batches left in its spools after the drain
    undelivered_by_member jsonb NOT NULL DEFAULT '{}',  -- of those, each member's
    detail       text NOT NULL DEFAULT '',
    PRIMARY KEY (launch_id, restart, node_index)
);
