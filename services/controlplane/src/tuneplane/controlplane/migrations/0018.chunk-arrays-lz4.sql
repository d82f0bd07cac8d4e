-- A chunk's point arrays compressed with lz4, not pglz: pglz spent ~1.2 s of PostgreSQL's
-- CPU per million points COPYed (9x lz4's), most of what a projected point cost the
-- database, for 16 MB instead of lz4's 19 MB per million points. Rows already stored keep
-- pglz (both are read alike); a server built without lz4 keeps pglz, and says so.
-- depends: 0017.purge-tags

DO $$
BEGIN
    ALTER TABLE readmodel.curve_chunks
        ALTER COLUMN steps SET COMPRESSION lz4,
        ALTER COLUMN wall_times SET COMPRESSION lz4,
        ALTER COLUMN "values" SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported THEN
    RAISE NOTICE 'this server has no lz4: curve_chunks arrays stay pglz-compressed';
END
$$;
