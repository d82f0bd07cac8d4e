-- The tree of batches a launch's deliver-only credentials cover: pinned by the first one
-- Node control issues for the launch (what the node's spool held to deliver then), so every
-- later one covers the same batches and no other, and marked delivered once the node reports
-- the spool delivered, after which none is issued.
-- depends: 0023.late-batches

ALTER TABLE public.launches ADD COLUMN delivery_tree jsonb;
