-- Whether TelemetryDestinations kept as Kubernetes resources were last seen present: the
-- exporter reading them bumps export_epoch when they appear after none (export turns on),
-- as applying the first one through the API does.
-- depends: 0025.slurm-left-trees

ALTER TABLE public.destinations_state ADD COLUMN kubernetes_on boolean NOT NULL DEFAULT false;
