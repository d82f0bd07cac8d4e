-- Wall times in chunk summaries, so a reduced answer can place its buckets in time (the
-- Charts page's wall-time and relative-time axes) without unpacking chunks: the wall time
-- of a chunk's first and last point, and of each segment's last point (read order, as
-- v_last and seg_last). Chunks stored before are filled in from their arrays.
-- depends: 0015.member-summaries

ALTER TABLE readmodel.curve_chunks
    ADD COLUMN w_first double precision,
    ADD COLUMN w_last  double precision,
    ADD COLUMN seg_last_walls double precision[];

UPDATE readmodel.curve_chunks c SET
    w_first = c.wall_times[1],
    w_last = c.wall_times[c.n],
    seg_last_walls = CASE WHEN c.seg_counts IS NULL THEN NULL ELSE (
        SELECT array_agg(c.wall_times[e.upto] ORDER BY e.i)
        FROM (SELECT i, sum(n) OVER (ORDER BY i) AS upto
              FROM unnest(c.seg_counts) WITH ORDINALITY AS s(n, i)) AS e) END;

ALTER TABLE readmodel.curve_chunks
    ALTER COLUMN w_first SET NOT NULL,
    ALTER COLUMN w_last SET NOT NULL;
