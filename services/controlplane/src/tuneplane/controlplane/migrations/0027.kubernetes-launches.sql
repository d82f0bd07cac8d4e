-- Kubernetes launches: a run's attempt as one Indexed Job, completion index i being rank i
-- (one member per pod, its collector the pod's native sidecar). They share the batch-job
-- launches' table and its collectors' with Slurm: a Job is a job of `nodes` pods of one
-- task each, whose sidecars redeem the launch's ticket once per index as a Slurm node's
-- collector does. `scheduler` says which runs it; `job_id` is the Job's uid.
-- depends: 0026.kubernetes-destinations

ALTER TABLE public.slurm_launches ADD COLUMN scheduler text NOT NULL DEFAULT 'slurm'
    CHECK (scheduler IN ('slurm', 'kubernetes'));
ALTER TABLE public.slurm_launches ADD CONSTRAINT slurm_launches_one_task_per_pod
    CHECK (scheduler = 'slurm' OR tasks_per_node = 1);
