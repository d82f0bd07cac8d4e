-- A series' identity includes its TensorBoard run path: the directory of the event file
-- relative to the source's log directory ('' for the log directory itself, and for every
-- other kind of source). add_scalars("lr_group", {"a": .., "b": ..}) writes one tag into
-- two runs, two series. Series stored before were read with no run path: they are the
-- root's and keep their key (run path '').
-- depends: 0013.oidc-users

ALTER TABLE readmodel.series ADD COLUMN run_path text NOT NULL DEFAULT '';

-- The old unique key by whatever name it has (a rebuild's tables are made LIKE the live
-- ones, which names it anew).
DO $$
DECLARE
    old_key text;
BEGIN
    FOR old_key IN SELECT conname FROM pg_constraint
                   WHERE conrelid = 'readmodel.series'::regclass AND contype = 'u' LOOP
        EXECUTE format('ALTER TABLE readmodel.series DROP CONSTRAINT %I', old_key);
    END LOOP;
END $$;

ALTER TABLE readmodel.series ADD CONSTRAINT series_identity
    UNIQUE (run_id, attempt, member, source, run_path, tag);
