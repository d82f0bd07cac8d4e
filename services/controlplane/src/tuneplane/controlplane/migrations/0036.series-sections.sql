-- The Charts grid's index of an attempt's charts, in sections by name prefix (the part
-- before the first '/', as TensorBoard groups tags): a section's page of tags is a range of
-- this index, and every section's count one ordered pass over it, in an attempt of 100,000
-- series too. The expression is web/read/chart_index.py's section_of(), written the same
-- (the planner matches it exactly).
-- depends: 0035.run-column-indexes

CREATE INDEX series_by_section ON readmodel.series (
    run_id, attempt,
    (CASE WHEN strpos(tag, '/') > 1 THEN left(tag, strpos(tag, '/') - 1) ELSE '' END),
    tag);
