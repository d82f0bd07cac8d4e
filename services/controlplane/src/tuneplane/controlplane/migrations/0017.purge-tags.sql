-- TensorBoard's older purge rule, for event files without a file_version of 2 or more: a
-- Summary event whose step is below the run's previous one purges the values read before
-- it, at or above its step, of its own tags only. Such a marker lists them; a restart
-- (SessionLog.START) lists none and purges every tag of its run.
-- depends: 0016.chunk-walls

ALTER TABLE readmodel.session_starts ADD COLUMN tags text[] NOT NULL DEFAULT '{}';
