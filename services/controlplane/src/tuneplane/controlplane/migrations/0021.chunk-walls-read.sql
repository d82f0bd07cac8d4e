-- Whose clock a chunk's wall times are: the source's (false), or the collector's when it
-- read points whose lines gave none (a JSONL line without "wall_time"; the batch's chunk
-- says `wall_times_read`). The read path says so, so a wall-time axis stays honest.
-- depends: 0020.sign-in-links

ALTER TABLE readmodel.curve_chunks
    ADD COLUMN walls_read boolean NOT NULL DEFAULT false;
