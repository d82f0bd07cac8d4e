-- The runs table's added columns look a run's latest attempt up by tag (a series summary:
-- an attempt may hold 100,000 series) and by key (a setting, any member): each an index
-- lookup, not a scan of the attempt's rows.
-- depends: 0034.run-config

CREATE INDEX series_by_tag ON readmodel.series (run_id, attempt, tag);
CREATE INDEX run_config_by_key ON readmodel.run_config (run_id, attempt, key);
