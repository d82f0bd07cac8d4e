-- What Kubernetes said of a launch's Job and its pods (its events: scheduling, image pulls,
-- evictions; and how its containers ended: OOMKilled), newest last, as control last read
-- them: shown on the run page beside the attempt. Empty for Slurm launches.
-- depends: 0027.kubernetes-launches

ALTER TABLE public.slurm_launches ADD COLUMN events jsonb NOT NULL DEFAULT '[]';
