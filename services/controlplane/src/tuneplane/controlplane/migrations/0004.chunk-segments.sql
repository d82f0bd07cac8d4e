-- Finer summaries inside a chunk: up to 64 equal-count segments, each with its first step,
-- count, min, max (finite values) and last value, so a reduced query answers at finer
-- resolution than whole chunks without unpacking them. NULL for chunks too small to need it.
-- depends: 0003.users

ALTER TABLE readmodel.curve_chunks
    ADD COLUMN seg_steps  bigint[],
    ADD COLUMN seg_last_steps bigint[],
    ADD COLUMN seg_counts integer[],
    ADD COLUMN seg_min    double precision[],
    ADD COLUMN seg_max    double precision[],
    ADD COLUMN seg_last   double precision[];
