-- A purged deletion leaves the topic's archive too: the purge rewrites each archive segment
-- that holds its batches without them (`runs`: the run ids a segment holds, so only those
-- are read; NULL for a segment archived before this, read once to fill it), and marks the
-- deletion `archive_pruned_at`. The archive pass leaves out the batches of a deletion
-- being purged, so no later segment holds them.
-- depends: 0031.topic-archive

ALTER TABLE public.topic_archive ADD COLUMN runs text[];
CREATE INDEX topic_archive_runs ON public.topic_archive USING gin (runs);
-- The sweep never deletes an object a segment is (its object key in use).
CREATE INDEX topic_archive_object ON public.topic_archive (object_key);
ALTER TABLE public.deletions ADD COLUMN archive_pruned_at timestamptz;
