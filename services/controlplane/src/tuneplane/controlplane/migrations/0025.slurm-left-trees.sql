-- What a Slurm job node's end report named of each member's spool it left, per member
-- ({"epoch": ..., "batches": ...}): the node is listed as having left what it reported less
-- the batches of that spool epoch the read models hold as delivered late.
-- depends: 0024.delivery-trees

ALTER TABLE public.slurm_collectors ADD COLUMN left_trees jsonb NOT NULL DEFAULT '{}';
