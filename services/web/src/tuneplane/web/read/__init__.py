"""The read path: every query of curves and rich records, behind named functions (routes
hold no SQL), and the maths of bounded answers. ``listings`` (runs, attempts, members,
series), ``run_table`` (the runs page), ``series_read`` (one series' bounded read) over
``downsample``/``columnar`` and ``purge`` (TensorBoard's semantics), ``export`` (a series'
points for a download), ``rich_records`` and ``summaries`` (what a stored TensorBoard record
holds), ``bucket`` (rich bytes from the object store)."""
