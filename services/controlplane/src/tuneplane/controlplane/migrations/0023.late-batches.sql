-- Batches delivered late: taken by ingest under a delivery token (after their attempt's
-- drain window, from a spool that outlived its collector), so marked in their Kafka record
-- (the `tuneplane-late` header). The run page lists them; a rebuild keeps the mark, since
-- it comes from the record.
-- depends: 0022.source-checkpoints

ALTER TABLE readmodel.batch_ledger ADD COLUMN late boolean NOT NULL DEFAULT false;
