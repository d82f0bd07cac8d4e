-- A chunk's points in one compact blob (tuneplane.common.chunks: byte planes of delta-coded
-- steps, wall times and values, each zstd-compressed), bit for bit what was sent, in about
-- a third of the arrays' bytes; readers decode either form. Chunks stored before keep their
-- arrays until `tuneplane-admin repack-chunks` packs them (a chunk holds one form, never
-- both). The blob is compressed already: stored as it is, inline or out of line (EXTERNAL),
-- never compressed again by PostgreSQL.
-- depends: 0036.series-sections

ALTER TABLE readmodel.curve_chunks
    ADD COLUMN packed bytea,
    ALTER COLUMN steps DROP NOT NULL,
    ALTER COLUMN wall_times DROP NOT NULL,
    ALTER COLUMN "values" DROP NOT NULL,
    ADD CONSTRAINT curve_chunks_one_form CHECK (
        (packed IS NOT NULL AND steps IS NULL AND wall_times IS NULL AND "values" IS NULL)
        OR (packed IS NULL AND steps IS NOT NULL AND wall_times IS NOT NULL
            AND "values" IS NOT NULL));

ALTER TABLE readmodel.curve_chunks ALTER COLUMN packed SET STORAGE EXTERNAL;
